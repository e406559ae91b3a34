"""Backends: one adapter per server API behind one neutral interface (ChatRequest in, ChatResponse
out).

To add a backend: write a class with `name`, `base_url`, `from_options(options)` (a BackendOptions
record), `chat(request, slot)` (hold `slot` around the exchange with the server alone),
`wire_options(max_output_tokens, temperature)`, `model_info(models)`, `prompt_cache_setting(choice)`
and `refusal_hint(status)` (OllamaBackend and OpenAIBackend below are the two worked examples), put
every quirk of the server in it, add it to BACKENDS, and `--backend NAME` offers it. The preflight
check at the end finds a missing server or model before any run folder is made, and, where the
backend names a `check_path` (a small GET every server of its kind answers), settles how calls reach
the server before the run's first call. """
from __future__ import annotations

import os
import re
import sys
import time
import urllib.parse

# the transport (http.client, ssl) is imported where a backend is made: a command that calls no
# server never
# imports it
from .records import (BackendOptions, CALL_SEED, ChatRequest, ChatResponse, FatalCallError, NUM_CTX,
    PREFLIGHT_TIMEOUT_S, PilotError, TEMPERATURE, TransientError, known_count)


DEFAULT_OLLAMA_HOST = "http://localhost:11434"

DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"


class OllamaBackend:
    """Ollama's native API: POST /api/chat, non-streaming, every option explicit, truncate off."""

    name = "ollama"
    # a small GET the check sends, and the connection choice is measured on
    check_path = "/api/version"

    def __init__(self, base_url: str, connect_timeout: float, read_timeout: float,
                 api_key: str | None = None,
                 reply_deadline: float | None = None):
        from .transport import HttpClient
        self.base_url = normalize_ollama_url(base_url)
        self.http = HttpClient(self.base_url, connect_timeout, read_timeout,
                               reply_deadline=reply_deadline)
        # one connection policy for both: the check's requests are the first calls that measure it
        self.preflight_http = HttpClient(self.base_url, PREFLIGHT_TIMEOUT_S,
                                         PREFLIGHT_TIMEOUT_S * 4,
                                         policy=self.http.policy, reply_deadline=PREFLIGHT_TIMEOUT_S
                                         * 4)
        self.thinking_models: set[str] = set()

    @classmethod
    def from_options(cls, options: BackendOptions) -> "OllamaBackend":
        host = options.host or check_server_url(os.environ.get("OLLAMA_HOST")
                                                or DEFAULT_OLLAMA_HOST, "OLLAMA_HOST")
        return cls(host, options.connect_timeout, options.read_timeout,
                   reply_deadline=options.deadline_s)

    def start_hint(self) -> str:
        return "start Ollama with `ollama serve` (or set OLLAMA_HOST / --host to where it listens)"

    def pull_hint(self, model: str) -> str:
        return f"ollama pull {model}"

    def refusal_hint(self, status: int | None) -> str:
        if status in (401, 403):
            return ("; Ollama takes no key: if a proxy in front of it asks for one, put it in the "
                    "address (--host http://user:password@host:port)")
        return ""

    def server_info(self) -> dict:
        return {"version": server_object(self.preflight_http.request("GET", "/api/version"),
                                         "GET /api/version").get("version")}

    def prompt_cache_setting(self, requested: str | None) -> tuple[str, str]:
        """Ollama always reuses its prompt cache (it sends cache_prompt: true to its runner); no
        request turns it off."""
        if requested == "off":
            raise PilotError("--prompt-cache off cannot be honoured: Ollama always reuses its "
                             "prompt cache and no request can turn it off; drop --prompt-cache, or "
                             "serve the model with llama.cpp's llama-server (--backend openai), "
                             "which can")
        return "on", "always on: Ollama reuses its prompt cache and cannot turn it off"

    def list_models(self) -> list[str]:
        return list(self._tags())

    def _tags(self) -> dict[str, dict]:
        """The server's models by name (an entry without a name that is text is none the runner can
        ask for)."""
        models = server_object(self.preflight_http.request("GET", "/api/tags"),
                               "GET /api/tags").get("models")
        entries = [m for m in models if isinstance(m, dict)] if isinstance(models, list) else []
        return {name: m for m in entries if isinstance(name := m.get("name") or m.get("model"),
                                                       str)}

    def describe_model(self, model: str) -> dict:
        tags = self._tags()
        item = tags.get(model) or tags.get(model + ":latest") or {}
        show = server_object(self.preflight_http.request("POST", "/api/show", {"model": model}),
                             "POST /api/show")
        capabilities = show.get("capabilities")
        details = object_field(item, "details") or object_field(show, "details")
        thinking = isinstance(capabilities, list) and "thinking" in capabilities
        if thinking:
            self.thinking_models.add(model)
        context_length = None
        for key, value in object_field(show, "model_info").items():
            if key.endswith(".context_length") and known_count(value):
                context_length = value
        return {"digest": item.get("digest"), "family": details.get("family"),
                "parameter_size": details.get("parameter_size"),
                "quantization": details.get("quantization_level"),
                "capabilities": capabilities, "thinking_capable": thinking,
                "think_false_sent": thinking, "trained_context_length": context_length}

    def wire_options(self, max_output_tokens: int, temperature: float = TEMPERATURE,
                     context_window: int = NUM_CTX) -> dict:
        """The options of one call kind, as the manifest locks them."""
        return self._options(max_output_tokens, temperature, CALL_SEED, context_window)

    @staticmethod
    def _options(budget: int, temperature: float, seed: int, context_window: int) -> dict:
        return {"temperature": temperature, "seed": seed, "num_predict": budget,
                "num_ctx": context_window}

    def build_body(self, request: ChatRequest) -> dict:
        body = {"model": request.model, "messages": [dict(m) for m in request.messages],
                "stream": False,
                "options": self._options(request.max_output_tokens, request.temperature,
                                         request.seed,
                                         request.context_window),
                "truncate": False}
        if request.thinking_off and request.model in self.thinking_models:
            body["think"] = False
        if request.top_logprobs:
            body.update(logprobs=True, top_logprobs=request.top_logprobs)
        return body

    def chat(self, request: ChatRequest, slot=None) -> tuple[ChatResponse, dict]:
        """One call; `slot` (the runner's bound on calls awaiting the server) is held around the
        exchange alone."""
        body = self.build_body(request)
        reply = self.http.request("POST", "/api/chat", body, slot=slot)
        message = reply.get("message") if isinstance(reply, dict) else None
        if not isinstance(message, dict):
            raise TransientError("POST /api/chat: reply has no `message` object")
        text = reply_text(message.get("content"), "POST /api/chat")
        reasoning = reply_text(message.get("thinking"), "POST /api/chat")
        done_reason = reply.get("done_reason") if isinstance(reply.get("done_reason"),
                                                             str) else None
        if not text.strip() and not reasoning and done_reason != "length":
            raise TransientError("POST /api/chat: reply has empty content")
        timings = {k: reply.get(k) for k in ("total_duration", "load_duration",
                                             "prompt_eval_duration",
                                             "eval_duration") if k in reply}
        response = ChatResponse(text=text, reasoning=reasoning,
                                prompt_tokens=known_count(reply.get("prompt_eval_count")),
                                output_tokens=known_count(reply.get("eval_count")),
                                stop_reason=done_reason,
                                timings=timings, raw_meta={"created_at": reply.get("created_at")},
                                server_work=server_work_from_ollama(reply),
                                token_choices=token_choices(reply.get("logprobs")))
        return response, {k: v for k, v in body.items() if k != "messages"}


def reply_text(value, what: str) -> str:
    """A reply's text: a string, or (OpenAI) a list of content parts whose text parts are joined;
    anything else is a reply this runner cannot read, retried as garbage."""
    if value is None or isinstance(value, str):
        return value or ""
    if isinstance(value, list) and all(isinstance(p, dict) for p in value):
        parts = [p.get("text") for p in value if p.get("type") in (None, "text", "output_text")]
        if all(isinstance(t, str) for t in parts):
            return "".join(parts)
    raise TransientError(f"{what}: the reply's content is not text (a JSON {type(value).__name__})")


def server_object(reply, what: str) -> dict:
    """A server check's reply must be a JSON object; anything else is one line, not a traceback."""
    if not isinstance(reply, dict):
        raise PilotError(f"the server answered {what} with a reply this runner cannot read (a JSON "
                         f"{type(reply).__name__}, not an object); is it an Ollama or "
                         "OpenAI-compatible server?")
    return reply


def object_field(reply: dict, key: str) -> dict:
    """reply[key] where it is an object; {} where it is missing or of another kind (a detail the
    server may omit)."""
    value = reply.get(key)
    return value if isinstance(value, dict) else {}


def normalize_ollama_url(url: str) -> str:
    """OLLAMA_HOST may be `host:port`, `http://host:port` or `0.0.0.0`; give a full base URL."""
    url = url.strip().rstrip("/")
    if "://" not in url:
        url = "http://" + url
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or "localhost"
    if host in ("0.0.0.0", "::"):
        host = "localhost"
    if ":" in host:
        host = f"[{host}]"                      # an IPv6 address keeps its brackets
    port = parts.port or (443 if parts.scheme == "https" else 11434)
    userinfo = parts.netloc.rpartition("@")[0]
    # the API's own prefix, given by mistake
    path = "" if parts.path.rstrip("/") == "/api" else parts.path
    return f"{parts.scheme}://{userinfo + '@' if userinfo else ''}{host}:{port}{path}"


def normalize_openai_url(url: str) -> str:
    """Accept the base URL with or without a trailing /v1 and never double it."""
    url = url.strip().rstrip("/")
    if "://" not in url:
        url = "http://" + url
    if url.endswith("/v1"):
        url = url[:-3]
    return url


class OpenAIBackend:
    """OpenAI-compatible POST /v1/chat/completions (vLLM, llama.cpp, SGLang, LM Studio, Ollama
    /v1)."""

    name = "openai"
    check_path = "/v1/models"

    def __init__(self, base_url: str, connect_timeout: float, read_timeout: float,
                 api_key: str | None = None,
                 thinking_control: str = "both", api_key_env: str = DEFAULT_API_KEY_ENV,
                 reply_deadline: float | None = None):
        from .transport import HttpClient
        self.base_url = normalize_openai_url(base_url)
        self.api_key_env = api_key_env
        self.key_sent = bool(api_key)
        self.key_checked = False
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = HttpClient(self.base_url, connect_timeout, read_timeout, headers,
                               reply_deadline=reply_deadline)
        self.preflight_http = HttpClient(self.base_url, PREFLIGHT_TIMEOUT_S,
                                         PREFLIGHT_TIMEOUT_S * 4, headers,
                                         policy=self.http.policy, reply_deadline=PREFLIGHT_TIMEOUT_S
                                         * 4)
        self.thinking_control = thinking_control
        self.context_windows: dict[str, int] = {}
        # llama-server answers /props with build_info: it honours cache_prompt
        self.llama_cpp = False
        # sent with every request when set (llama.cpp only)
        self.cache_prompt: bool | None = None

    @classmethod
    def from_options(cls, options: BackendOptions) -> "OpenAIBackend":
        base_url = options.base_url or os.environ.get("OPENAI_BASE_URL")
        if not base_url:
            raise PilotError("--backend openai needs a server address: pass --base-url URL or set "
                             "OPENAI_BASE_URL")
        check_server_url(base_url, "--base-url" if options.base_url else "OPENAI_BASE_URL")
        api_key = os.environ.get(options.api_key_env) or None
        if api_key is None and options.api_key_env != DEFAULT_API_KEY_ENV:
            state = "is empty" if options.api_key_env in os.environ else "is not set"
            raise PilotError(f"--api-key-env names ${options.api_key_env}, which {state} in this "
                             f"shell; export the key in it (export {options.api_key_env}=...), or "
                             "drop --api-key-env for a server that takes no key")
        return cls(base_url, options.connect_timeout, options.read_timeout, api_key,
                   options.thinking_control,
                   options.api_key_env, reply_deadline=options.deadline_s)

    def start_hint(self) -> str:
        return ("start the OpenAI-compatible server (vLLM, llama-server, ...) or fix --base-url / "
                "OPENAI_BASE_URL")

    def pull_hint(self, model: str) -> str:
        return f"serve it under that id (vLLM --served-model-name {model}, llama-server -a {model})"

    def refusal_hint(self, status: int | None) -> str:
        if status not in (401, 403):
            return ""
        sent = "the key in" if self.key_sent else "no key was sent:"
        return (f"; {sent} ${self.api_key_env} (set it to a key this server accepts, or name the "
                "variable that holds the key with --api-key-env)")

    def _models(self) -> list[dict]:
        data = server_object(self.preflight_http.request("GET", "/v1/models"),
                             "GET /v1/models").get("data")
        return [m for m in data if isinstance(m, dict)] if isinstance(data, list) else []

    def server_info(self) -> dict:
        self._models()   # the reachability check; the probes below are optional extras
        self._check_key()
        info: dict = {}
        for path, keys in (("/version", ("version",)), ("/props", ("build_info", "total_slots")),
                           ("/api/version", ("version",))):
            try:
                reply = self.preflight_http.request("GET", path)
            except PilotError:
                continue
            if isinstance(reply, dict):
                if path == "/props" and "build_info" in reply:
                    self.llama_cpp = True
                for key in keys:
                    if key in reply and key not in info:
                        info[key] = reply[key]
                settings = reply.get("default_generation_settings")
                if isinstance(settings, dict) and known_count(settings.get("n_ctx")):
                    info.setdefault("slot_context", settings["n_ctx"])
        return info

    def _check_key(self) -> None:
        """Whether the chat endpoint takes this key (or none), before any run folder is made:
        servers that guard it may leave /v1/models open (llama-server does). An empty request is
        sent, which every server refuses as a bad request once the key passes, and none answers with
        a model call; only 401 and 403 are raised."""
        if self.key_checked:
            return
        try:
            self.preflight_http.request("POST", "/v1/chat/completions", {})
        except FatalCallError as err:
            if err.status in (401, 403):
                raise
        except TransientError:
            # a 5xx to an empty request, or a hiccup: the calls will say more
            pass
        self.key_checked = True

    def list_models(self) -> list[str]:
        return [m["id"] for m in self._models() if isinstance(m.get("id"), str)]

    def prompt_cache_setting(self, requested: str | None) -> tuple[str, str]:
        """llama.cpp takes cache_prompt per request (default here: off); other servers decide it
        themselves."""
        if self.llama_cpp:
            setting = requested or DEFAULT_PROMPT_CACHE
            self.cache_prompt = setting == "on"
            return (setting, f"llama.cpp: cache_prompt {str(self.cache_prompt).lower()} sent with "
                    "every request")
        if requested:
            raise PilotError(f"--prompt-cache {requested} cannot be honoured: only llama.cpp's "
                             "llama-server takes it per request; this server decides it itself "
                             "(vLLM: --enable-prefix-caching); drop --prompt-cache")
        return "server", "set by the server, not per request (vLLM: --enable-prefix-caching)"

    def describe_model(self, model: str) -> dict:
        item = next((m for m in self._models() if m.get("id") == model), {})
        meta = item.get("meta") if isinstance(item.get("meta"), dict) else {}
        # vLLM reports max_model_len; llama.cpp the per-slot n_ctx (in meta, or in /props)
        # a window no server could mean (zero, negative, not a whole number) is unknown, never
        # believed
        context = item.get("max_model_len")
        if not known_count(context):
            context = (meta.get("n_ctx") if known_count(meta.get("n_ctx"))
                       else self.server_info().get("slot_context"))
        if known_count(context):
            self.context_windows[model] = context
        else:
            context = None
        fingerprint = {"root": item.get("root"), "owned_by": item.get("owned_by"),
                       "parameter_count": meta.get("n_params"),
                       "trained_context_length": meta.get("n_ctx_train"),
                       "server_context_window": context}
        # No digest on this API: what the server says about the model stands in for one.
        return {"digest": None, **fingerprint, "fingerprint": fingerprint,
                "thinking_control": self.thinking_control}

    def wire_options(self, max_output_tokens: int, temperature: float = TEMPERATURE,
                     context_window: int = NUM_CTX) -> dict:
        """The options of one call kind, as the manifest locks them (the server sets its own window:
        the run checks it with check_context_window)."""
        return self._body_options(max_output_tokens, temperature, CALL_SEED, True)

    def _body_options(self, budget: int, temperature: float, seed: int, thinking_off: bool) -> dict:
        options = {"max_tokens": budget, "max_completion_tokens": budget,
                   "temperature": temperature,
                   "seed": seed}
        if self.cache_prompt is not None:
            options["cache_prompt"] = self.cache_prompt
        if thinking_off and self.thinking_control in ("template", "both"):
            options["chat_template_kwargs"] = {"enable_thinking": False}
        if thinking_off and self.thinking_control in ("effort", "both"):
            options["reasoning_effort"] = "none"
        return options

    def chat(self, request: ChatRequest, slot=None) -> tuple[ChatResponse, dict]:
        # A prompt that surely cannot fit is refused here (servers that truncate silently exist);
        # the
        # bound is a lower one (6 characters a token), so a borderline prompt is left to the
        # server's 400.
        window = self.context_windows.get(request.model)
        at_least = sum(len(m["content"]) for m in request.messages) // 6
        if window and at_least + request.max_output_tokens > window:
            raise FatalCallError(f"prompt of at least {at_least} tokens plus "
                                 f"{request.max_output_tokens} output "
                                 f"tokens cannot fit the server's {window}-token context window",
                                 400)
        body = {"model": request.model, "messages": [dict(m) for m in request.messages],
                "stream": False,
                **self._body_options(request.max_output_tokens, request.temperature, request.seed,
                                     request.thinking_off)}
        if request.top_logprobs:
            body.update(logprobs=True, top_logprobs=request.top_logprobs)
        reply = self.http.request("POST", "/v1/chat/completions", body, slot=slot)
        choices = reply.get("choices") if isinstance(reply, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict) or \
                not isinstance(choices[0].get("message"), dict):
            raise TransientError("POST /v1/chat/completions: reply has no choices[0].message")
        message = choices[0]["message"]
        text = reply_text(message.get("content"), "POST /v1/chat/completions")
        reasoning = reply_text(message.get("reasoning") or message.get("reasoning_content"),
                               "POST /v1/chat/completions")
        finish = choices[0].get("finish_reason") if isinstance(choices[0].get("finish_reason"),
                                                               str) else None
        if not text.strip() and not reasoning and finish != "length":
            raise TransientError("POST /v1/chat/completions: reply has empty content")
        usage = reply.get("usage") if isinstance(reply.get("usage"), dict) else {}
        timings = reply.get("timings") if isinstance(reply.get("timings"), dict) else {}
        response = ChatResponse(text=text, reasoning=reasoning,
                                prompt_tokens=known_count(usage.get("prompt_tokens")),
                                output_tokens=known_count(usage.get("completion_tokens")),
                                stop_reason=finish,
                                timings=timings,
                                raw_meta={"system_fingerprint": reply.get("system_fingerprint"),
                                                           "served_model": reply.get("model")},
                                server_work=server_work_from_openai(usage, timings),
                                token_choices=token_choices(object_field(
                                    choices[0], "logprobs").get("content")))
        return response, {k: v for k, v in body.items() if k != "messages"}


BACKENDS = {"ollama": OllamaBackend, "openai": OpenAIBackend}

# reproducibility first: see scripts/README.md, "The prompt cache"
DEFAULT_PROMPT_CACHE = "off"


# the reply's first positions whose alternatives are kept (a verdict word's tokens come first)
TOKEN_POSITIONS = 8


def token_choices(positions) -> tuple:
    """Ollama's `logprobs` list and the OpenAI API's `choices[0].logprobs.content` have one shape:
    per generated token, {token, logprob, top_logprobs: [{token, logprob}, ...]}. Kept: the first
    TOKEN_POSITIONS positions, each (token, ((alternative, logprob), ...)), with only alternatives a
    server could have meant (text, a finite logprob at most 0); anything else reads as none."""
    if not isinstance(positions, list):
        return ()
    out = []
    for position in positions[:TOKEN_POSITIONS]:
        if not isinstance(position, dict) or not isinstance(position.get("token"), str):
            break
        alternatives = position.get("top_logprobs")
        kept = tuple((a["token"], float(a["logprob"])) for a in alternatives
                     if isinstance(a, dict) and isinstance(a.get("token"), str)
                     and is_logprob(a.get("logprob"))) if isinstance(alternatives, list) else ()
        out.append((position["token"], kept))
    return tuple(out)


def is_logprob(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and \
        -1e9 < value <= 0.0


def server_work_from_ollama(reply: dict) -> dict:
    """Ollama reports one prompt count whose meaning moved between versions (the full prompt, or
    only the tokens processed anew in 0.30.0), and nothing about its cache: the tokens evaluated and
    cached are unknown."""
    return {"prompt_tokens": known_count(reply.get("prompt_eval_count")), "prompt_cached": None,
            "prompt_evaluated": None}


def server_work_from_openai(usage: dict, timings: dict) -> dict:
    """llama.cpp: timings.cache_n (reused) and prompt_n (evaluated); vLLM:
    usage.prompt_tokens_details.cached_tokens (with --enable-prompt-tokens-details), the rest
    evaluated. None where the server does not say."""
    prompt = known_count(usage.get("prompt_tokens"))
    cached, evaluated = known_count(timings.get("cache_n")), known_count(timings.get("prompt_n"))
    details = usage.get("prompt_tokens_details")
    if cached is None and isinstance(details, dict):
        cached = known_count(details.get("cached_tokens"))
    if evaluated is None and cached is not None and prompt is not None:
        evaluated = prompt - cached
    if prompt is None and cached is not None and evaluated is not None:
        prompt = cached + evaluated
    return {"prompt_tokens": prompt, "prompt_cached": cached, "prompt_evaluated": evaluated}


def estimate_tokens(text: str) -> int:
    """Rough token count: one token per four characters (stated in `plan` and in scripts/README.md,
    "What a run does and costs")."""
    return (len(text) + 3) // 4


# how long the check waits for a server that says it is loading a model
PREFLIGHT_LOADING_WAIT_S = 300.0


def server_info_when_loaded(backend, wait_s: float = PREFLIGHT_LOADING_WAIT_S,
                            poll_s: float = 2.0) -> dict:
    """The server's description; a server that answers that it is still loading a model is waited
    for."""
    from .transport import redact_url
    deadline = time.monotonic() + wait_s
    told = False
    while True:
        try:
            return backend.server_info()
        except TransientError as err:
            if not err.loading or time.monotonic() >= deadline:
                raise
            if not told:
                print(f"waiting for the server at {redact_url(backend.base_url)} to load its model "
                      f"(up to {wait_s:.0f} s)", file=sys.stderr)
                told = True
            time.sleep(poll_s)


def preflight(backend, models: list[str],
              demo_command: str = "python3 scripts/run_pilot.py demo") -> dict:
    """Server reachable, every model present; returns what the manifest locks per model. With no
    server, the message ends with `demo_command` (the demo of the study being run)."""
    from .transport import redact_url
    try:
        server = server_info_when_loaded(backend)
    except TransientError as err:
        raise PilotError(f"no model server answers at {redact_url(backend.base_url)} ({err}); "
                         f"{backend.start_hint()}\nto see what the tool produces first, with no "
                         "model and no "
                         f"network: {demo_command}") from None
    except FatalCallError as err:
        raise PilotError(f"the server at {redact_url(backend.base_url)} refused the check: {err}"
                         f"{backend.refusal_hint(err.status)}") from None
    available = [m for m in backend.list_models() if m]
    missing = [m for m in models if m not in available and f"{m}:latest" not in available]
    if missing:
        have = ", ".join(sorted(available)) or "none"
        names = ", ".join(f"'{m}'" for m in missing)
        raise PilotError(f"{'model' if len(missing) == 1 else 'models'} {names} "
                         f"{'is' if len(missing) == 1 else 'are'} not on the server at "
                         f"{redact_url(backend.base_url)} "
                         f"(it has: {have}); get {'it' if len(missing) == 1 else 'them'} with: "
                         f"{'; '.join(backend.pull_hint(m) for m in missing)}")
    info = {}
    for model in models:
        try:
            info[model] = {"server": server, **backend.describe_model(model)}
        except PilotError as err:
            raise PilotError(f"could not describe model '{model}': {err}") from None
    # how calls reach the server, decided on the check's own requests (and a few more where needed),
    # so that the
    # run's first wave goes out at once on the chosen connections (the runner records the choice
    # with its first call)
    client, path = getattr(backend, "preflight_http", None), getattr(backend, "check_path", None)
    if client is not None and path:
        client.settle_connections(path)
    return info


def check_context_window(model_info: dict, window: int, asked: bool) -> list[str]:
    """The run's context window against what the server reports for each model, before any call: a
    window asked for (--context-window) that an OpenAI-compatible server does not serve is refused,
    since every prompt was planned for it; a window above what the model was trained on, or one the
    server does not report, is a warning."""
    warnings = []
    for model, info in model_info.items():
        served = known_count(info.get("server_context_window"))
        trained = known_count(info.get("trained_context_length"))
        if served is not None and served < window:
            if asked:
                raise PilotError(f"the server serves '{model}' with a {served:,}-token context "
                                 f"window, smaller than --context-window {window:,}; start it with "
                                 "a larger one (llama-server -c, vLLM --max-model-len) or pass "
                                 f"--context-window {served:,}")
            warnings.append(f"the server serves '{model}' with a {served:,}-token context window, "
                            f"smaller than the {window:,} the prompts were planned for: a call "
                            "that does not fit is refused")
        elif asked and served is None and "server_context_window" in info:
            warnings.append(f"the server does not say which context window it serves '{model}' "
                            f"with; the run plans for --context-window {window:,}, so make sure "
                            "the server was started with at least that")
        if trained is not None and trained < window:
            warnings.append(f"'{model}' was trained on a {trained:,}-token context; "
                            f"--context-window {window:,} goes "
                            f"beyond it, where models are often unreliable")
    return warnings


def check_server_url(url: str, source: str) -> str:
    """The address as given, if it names a server: http or https, a host, a port in 1-65535 when
    given, and no query or fragment (a key put there would be printed and recorded, and the API's
    paths joined after it). Messages show the address with any user:password, query and fragment
    masked."""
    text = url.strip()
    candidate = text if "://" in text else "http://" + text
    given = f"{source} {masked_address(url)!r}".strip()
    example = "give an address like http://127.0.0.1:11434"
    if any(c.isspace() for c in text):
        raise PilotError(f"{given} has a space in it, so it is not a server address; {example}")
    try:
        parts = urllib.parse.urlsplit(candidate)
        port = parts.port
    except ValueError as err:
        raise PilotError(f"{given} is not a server address "
                         f"({str(err).replace(text, masked_address(text))}); "
                         f"{example}") from None
    if parts.query or parts.fragment or candidate.endswith(("?", "#")):
        raise PilotError(
            f"{given} has a {'query (?...)' if '?' in candidate else 'fragment (#...)'}, which a "
            "server address has no use for (it would be printed, and the API's paths joined after "
            "it); give the address alone (a key goes in the variable --api-key-env names, or as "
            f"user:password@ before the host); {example}"
        )
    if parts.scheme not in ("http", "https"):
        raise PilotError(f"{given} has the scheme {parts.scheme!r}, not http or https; {example}")
    if not parts.hostname:
        raise PilotError(f"{given} names no host; {example}")
    if port is not None and not 1 <= port <= 65535:
        raise PilotError(f"{given} has port {port}, outside 1 to 65535; {example}")
    return text


def masked_address(url: str) -> str:
    """An address as typed, safe to print: any user:password, query and fragment masked (it may not
    parse)."""
    text = url.strip()
    text = re.sub(r"(?<=://)[^/?#@]*@", "***@", text) if "://" in text else re.sub(r"^[^/?#@]*@",
        "***@", text)
    return re.sub(r"([?#]).*", lambda m: m.group(1) + "***", text, count=1, flags=re.S)


LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0", "::", "ip6-localhost"})


def server_identity(url: str | None) -> tuple | None:
    """What makes two addresses the same server: scheme, host (every loopback spelling is one),
    port, path."""
    if not url:
        return None
    text = url.strip().rstrip("/")
    try:
        parts = urllib.parse.urlsplit(text if "://" in text else "http://" + text)
        port = parts.port
    except ValueError:
        return (text,)
    host = (parts.hostname or "").lower()
    host = "loopback" if host in LOOPBACK_HOSTS or host.startswith("127.") else host
    port = port or (443 if parts.scheme == "https" else 80)
    path = parts.path.rstrip("/")
    return (parts.scheme, host, port, path[:-3] if path.endswith("/v1") else path)
