"""Runner (PROTOCOL.md section 2, cascade): cells, retries, resume, concurrency and the determinism
probe. A cell is one cascade and then independent probes; its study plans its calls and writes their
messages, and every call is journalled before the next one is sent."""
from __future__ import annotations

import contextlib
import dataclasses
import random
import re
import signal
import sys
import threading
import time
from typing import Any, Callable

from .bank import call_stage
from .cells import journal_streams, run_regimes
from .progress import Progress
from .prompts import build_messages
from .records import (ANSWER_NUM_PREDICT, CALL_SEED, CallSpec, Cell, ChatRequest, ChatResponse,
                      DEFAULT_BACKOFF_BASE_S, DEFAULT_BACKOFF_CAP_S, DEFAULT_BUDGET,
                      DEFAULT_GIVE_UP_AFTER_S, DEFAULT_RECHECK, DEFAULT_RETRIES, DiskFull,
                      FatalCallError, MAX_RETRY_AFTER_S, PilotError, RunInterrupted, ServerGone,
                      Settings, Study, TransientError, folder_study, utc_now)
from .runfolder import (Journal, Manifest, cell_key, is_complete, parse_record_line, record_variant,
                        records_digest, variant_suffix)


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    retries: int = DEFAULT_RETRIES
    backoff_base_s: float = DEFAULT_BACKOFF_BASE_S
    backoff_cap_s: float = DEFAULT_BACKOFF_CAP_S
    give_up_after_s: float = DEFAULT_GIVE_UP_AFTER_S

    def delay(self, attempt: int, retry_after: float | None, jitter: random.Random) -> float:
        if retry_after is not None:
            return min(retry_after, MAX_RETRY_AFTER_S)
        # the exponent is bounded: an unreachable server is retried until --give-up-after, not
        # --retries
        return jitter.uniform(0.5, 1.0) * min(self.backoff_cap_s,
                                              self.backoff_base_s * 2 ** min(attempt - 1, 60))


class RunAborted(PilotError):
    """A failure every later call would share (unknown model, bad credentials): stop the run."""


class TemplateMismatch(RunAborted):
    """Most of a run's first replies carry chat-template control tokens: stop the run; once the
    server's template is fixed, the resumed run sends every flagged reply again (repair_journal)."""


class ServerWatch:
    """How long the server has been unreachable across consecutive calls; any reply resets the
    clock."""

    def __init__(self):
        self.unreachable_since: float | None = None
        self._lock = threading.Lock()

    def answered(self) -> None:
        with self._lock:
            self.unreachable_since = None

    def unreachable_for(self) -> float:
        """Seconds since the first of the current run of unreachable calls (starting the clock if
        needed)."""
        with self._lock:
            now = time.monotonic()
            if self.unreachable_since is None:
                self.unreachable_since = now
            return now - self.unreachable_since


# The control tokens of the common chat templates (ChatML, Llama 3, Gemma, Mistral, Phi): in a reply
# they mean the
# server formats prompts with a template that is not the model's, and every answer is then noise.
CONTROL_TOKENS = re.compile(
    r"<\|(?:im_start|im_end|eot_id|start_header_id|end_header_id|endoftext|end|user|assistant|"
    r"system)\|>|<(?:start|end)_of_turn>|\[/?INST\]|</s>"
)
# a run's first replies: once most of them are flagged, the run stops
TEMPLATE_CHECK_REPLIES = 10


class TemplateWatch:
    """The first replies of a run: when most of them carry control tokens, the run stops
    (TemplateMismatch)."""

    def __init__(self):
        self.seen = self.flagged = 0
        self.example = ""
        self._lock = threading.Lock()

    def check(self, text: str) -> bool:
        """Whether this reply carries control tokens; raises TemplateMismatch once most of the first
        replies do."""
        found = CONTROL_TOKENS.search(text or "")
        with self._lock:
            if self.seen < TEMPLATE_CHECK_REPLIES:
                self.seen += 1
                self.flagged += bool(found)
                self.example = self.example or (found.group(0) if found else "")
            # decided as soon as most of the first replies are flagged, without waiting for the rest
            # of them
            mismatch = self.flagged * 2 > TEMPLATE_CHECK_REPLIES
        if mismatch:
            raise TemplateMismatch("the server's chat template does not match the model: "
                                   f"{self.flagged} of its first {self.seen} replies carry "
                                   f"chat-template control tokens (such as {self.example}); set "
                                   "the model's own template on the server (llama.cpp: --jinja "
                                   "takes the one in the model file, but a file without one falls "
                                   "back to ChatML: then name it, e.g. --no-jinja --chat-template "
                                   "gemma, or --chat-template-file FILE; Ollama: TEMPLATE in the "
                                   "model's Modelfile), then run the same command again: every "
                                   "reply that carries control tokens is moved to "
                                   "raw/*.quarantine (kept as evidence) and sent again")
        return bool(found)


# while cells end, the manifest is rewritten at most this often
MANIFEST_REWRITE_INTERVAL_S = 0.5


class ManifestWriter:
    """Cells' ends written into the manifest by a thread of its own, so that no cell waits for the
    manifest's rewrite and its fsyncs; ends that come within MANIFEST_REWRITE_INTERVAL_S of a
    rewrite go into the next one. Only the manifest waits: every call is still journalled (written
    and fsynced) before the next call of its cell is sent, and a cell that a crash leaves out of the
    manifest is rebuilt from the journal on resume, without calling the model."""

    def __init__(self, manifest: Manifest):
        self.manifest = manifest
        self.error: BaseException | None = None
        self._wanted = threading.Event()
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._write, name="manifest", daemon=True)
        self._thread.start()

    def set_cell(self, key: str, entry: dict) -> None:
        with self.manifest._lock:
            self.manifest.data["cells"][key] = entry
        self.changed()

    def changed(self) -> None:
        """The manifest's data changed: rewrite it soon (raises what stopped an earlier rewrite, if
        anything did)."""
        if self.error is not None:
            raise self.error
        self._wanted.set()

    def _write(self) -> None:
        while True:
            self._wanted.wait()
            self._wanted.clear()
            if self.error is None:
                try:
                    self.manifest.save()
                # DiskFull, say: raised in the cells' threads and by close()
                except BaseException as err:
                    self.error = err
            if self._closing.is_set() and not self._wanted.is_set():
                return
            self._closing.wait(MANIFEST_REWRITE_INTERVAL_S)

    def close(self) -> None:
        """The last rewrite done (raises what stopped it, if anything did)."""
        self._closing.set()
        self._wanted.set()
        self._thread.join()
        if self.error is not None:
            raise self.error


@dataclasses.dataclass
class RunContext:
    backend: Any
    journal: Journal
    manifest: Manifest
    tasks: dict
    config: Settings
    runner_sha256: str
    policy: RetryPolicy
    stop: threading.Event
    progress: Progress
    # (model, regime, budget, sample) -> episode -> kind -> record, read back at start
    done: dict
    regimes: dict       # name -> Regime: the regimes of this run
    # whose cells these are: it plans each cell's calls and writes their messages
    study: Study
    jitter: random.Random = dataclasses.field(default_factory=random.Random)
    watch: ServerWatch = dataclasses.field(default_factory=ServerWatch)
    template: TemplateWatch = dataclasses.field(default_factory=TemplateWatch)
    # the --concurrency bound on calls awaiting the server
    slots: CallSlots | None = None
    # where a cell's answers fan out (None: one by one)
    answer_pool: ThreadPoolExecutor | None = None
    # where cells' ends go (None: the manifest, at once)
    cell_writer: ManifestWriter | None = None
    # cell -> its place in the run's schedule (run_cells)
    rank: dict = dataclasses.field(default_factory=dict)
    # id(record) -> (record, its journalled line)
    written: dict = dataclasses.field(default_factory=dict)
    written_lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)


def sample_seed(sample: int) -> int:
    """The sampling seed of repeated sample k (sample 0 is the pre-registered seed)."""
    return CALL_SEED + sample


def send_with_retries(ctx: RunContext, request: ChatRequest, label: str,
                      priority: Any = (0, 0)) -> tuple[ChatResponse, dict, int, float]:
    """Send one call; transient failures are retried with capped backoff, fatal ones raised at once.

    A server that answers with an error is retried --retries times. A server that does not answer at
    all (refused, reset, timed out) is retried until it has been unreachable, across consecutive
    calls, for --give-up-after seconds; then the run stops (ServerGone) and the cell is left
    unfinished, not FAILED. `priority` orders the calls waiting for a --concurrency slot (lowest
    first; see call_priority). """
    # the transport is imported by a run, not by plan
    from .slots import SlotHold
    from .transport import DEADLINE_REASON, redact_url
    policy = ctx.policy
    attempt = 0
    try:
        while True:
            attempt += 1
            try:
                slot = SlotHold(ctx.slots, priority, ctx.stop)
                response, wire = ctx.backend.chat(request, slot)
                http = getattr(ctx.backend, "http", None)
                resent = http.take_resends() if hasattr(http, "take_resends") else 0
                if resent:
                    attempt += resent
                    ctx.progress.resent(label, attempt)
                choice = http.take_connection_choice() if hasattr(http,
                    "take_connection_choice") else None
                if choice:
                    record_connection_choice(ctx, choice)
            except FatalCallError:
                ctx.watch.answered()
                raise
            except TransientError as err:
                # the run was stopped: its calls still in flight were given up on
                if ctx.stop.is_set():
                    raise RunInterrupted("interrupted") from None
                unreachable_s = None
                delay = policy.delay(attempt, err.retry_after, ctx.jitter)
                if err.unreachable:
                    unreachable_s = ctx.watch.unreachable_for()
                    left_s = policy.give_up_after_s - unreachable_s
                    if left_s <= 0:
                        gone = ServerGone(f"the server at {redact_url(ctx.backend.base_url)} has "
                                          f"not answered for {unreachable_s:.0f} s "
                                          f"(--give-up-after {policy.give_up_after_s:g}; last: "
                                          f"{err.reason})")
                        # it took the call, and sent nothing back in time
                        gone.slow = err.reason == "timed out"
                        # it sent something, never a whole reply
                        gone.dripped = err.reason == DEADLINE_REASON
                        raise gone from None
                    delay = min(delay, left_s)
                else:
                    ctx.watch.answered()
                    if attempt > policy.retries:
                        raise TransientError(f"gave up after {attempt} attempts: {err}") from None
                ctx.progress.retrying(label, err.reason, attempt + 1, policy.retries + 1, delay,
                                      err.loading,
                                      unreachable_s, policy.give_up_after_s)
                if ctx.stop.wait(delay):
                    raise RunInterrupted("interrupted while waiting to retry") from None
            else:
                ctx.watch.answered()
                return response, wire, attempt, time.monotonic() - slot.started
    finally:
        ctx.progress.retry_over(label)


def record_connection_choice(ctx: RunContext, choice: dict) -> None:
    """How calls reach the server, as the first calls decided it: into the manifest's `connections`
    (outside the lock: it shapes no output, and a resume may choose otherwise), and said once on
    stderr where it is not the usual kept-alive connection."""
    from .transport import WAIT_NAMES, redact_url
    server = redact_url(ctx.backend.base_url)
    entry = {"server": server, "connections": choice["connections"], "why": choice["why"],
             "body_wait_ms": choice["body_wait_ms"], "calls_measured": choice["calls_measured"],
             "at": utc_now()}
    with ctx.manifest._lock:
        entries = ctx.manifest.data.setdefault("connections", [])
        if not entries or (entries[-1].get("server"), entries[-1].get("connections")) != (server,
            entry["connections"]):
            entries.append(entry)
    if ctx.cell_writer is not None:
        ctx.cell_writer.changed()
    else:
        ctx.manifest.save()
    if choice["way"] != "kept":
        waits = choice["body_wait_ms"]
        ctx.progress.note(f"connections: replies from {server} on kept-alive connections waited "
                          f"{waits.get('kept_alive', 0):g} ms each between their headers and their "
                          "body (the server leaves Nagle's algorithm on, and the client delays "
                          f"its ACK); from now on: {choice['connections']} (replies waited "
                          f"{waits[WAIT_NAMES[choice['way']]]:g} ms); recorded in the manifest "
                          "under `connections`")


def run_cell(ctx: RunContext, cell: Cell) -> str:
    """Run (or finish) one cell; every call is journalled before the next is sent."""
    regime = ctx.regimes[cell.regime]
    episode = ctx.tasks["episodes"][cell.episode]
    done = ctx.done.get((cell.model, cell.regime, cell.budget, cell.sample), {}).get(cell.episode,
        {})
    key = cell_key(*cell)
    entry = {"model": cell.model, "regime": cell.regime, "episode": cell.episode}
    if cell.budget != DEFAULT_BUDGET or cell.sample:
        entry.update(budget=cell.budget, sample=cell.sample)
    state = registry = ""
    plan = ctx.study.plan(regime, episode, cell.budget)
    records, replies = {}, []

    def call(spec: CallSpec) -> dict:
        record = done.get(spec.kind)
        if record is None:
            if ctx.stop.is_set():
                raise RunInterrupted("interrupted")
            record = make_call(ctx, cell, spec, build_messages(ctx.study, regime, episode, spec,
                                                               state, registry))
        records[spec.kind] = record
        return record

    try:
        # The cascade, strictly in order: compactions, sidecar registry updates and judge calls,
        # each fed by the last.
        for spec in plan:
            if spec.stage == "answer":
                continue
            reply = call(spec)["response"]
            if spec.is_compaction and spec.cascade:
                replies.append(reply)
                state = ctx.study.cascade_state(regime, episode, replies)
            elif spec.stage == "extraction":
                registry = reply
        # The answers see only the final state (R0: the transcript), so they are independent: they
        # fan out.
        fan_out(ctx, call, [spec for spec in plan if spec.stage == "answer"])
    except (TransientError, FatalCallError) as err:
        with ctx.written_lock:
            for record in records.values():
                ctx.written.pop(id(record), None)
        set_cell(ctx, key, {**entry, "status": "FAILED", "n_calls": len(records),
                            "reason": str(err),
                            "updated_at": utc_now()})
        ctx.progress.update(failed=1)
        if isinstance(err, FatalCallError) and err.status in (401, 403, 404):
            raise RunAborted(f"{cell.model}: {err}{ctx.backend.refusal_hint(err.status)}") from None
        return "FAILED"
    ordered = [records[spec.kind] for spec in plan]
    with ctx.written_lock:
        written = {id(r): ctx.written.pop(id(r)) for r in ordered if id(r) in ctx.written}
    # the plan's kinds are recorded with the cell, so that status and verify can check it from the
    # folder alone
    set_cell(ctx, key, {**entry, "status": "COMPLETE", "n_calls": len(records), "reason": None,
                        "records_sha256": records_digest(ordered, written),
                        "kinds": [spec.kind for spec in plan],
                        "updated_at": utc_now()})
    ctx.progress.update(cells=1)
    return "COMPLETE"


def set_cell(ctx: RunContext, key: str, entry: dict) -> None:
    """A cell's end, into the manifest (through the run's ManifestWriter when it has one)."""
    (ctx.cell_writer or ctx.manifest).set_cell(key, entry)


def fan_out(ctx: RunContext, call: Callable[[CallSpec], dict], specs: list[CallSpec]) -> None:
    """Run independent calls of one cell at once on the shared answer pool (one by one without it);
    every call is waited for, then the first failure in plan order is raised, so a cell fails the
    same way at every N."""
    from concurrent.futures import wait
    if ctx.answer_pool is None or len(specs) < 2:
        for spec in specs:
            call(spec)
        return
    if ctx.config.prompt_cache == "on":
        # alone first: the rest can reuse its cached prompt prefix (R0: the whole transcript)
        call(specs[0])
        specs = specs[1:]
    futures = [ctx.answer_pool.submit(call, spec) for spec in specs]
    wait(futures)
    for future in futures:
        future.result()


def call_priority(ctx: RunContext, cell: Cell, spec: CallSpec) -> tuple[int, bool]:
    """Where a call waits for a slot: its cell's place in the schedule first (the earliest episode's
    cells are finished first, the later ones fill the slots they leave), then a compaction before an
    answer."""
    return ctx.rank.get(cell, 0), not spec.is_compaction


def make_call(ctx: RunContext, cell: Cell, spec: CallSpec, messages: list[dict]) -> dict:
    temperature = ctx.config.temperature if spec.temperature is None else spec.temperature
    seed = sample_seed(cell.sample) if spec.seed is None else spec.seed
    request = ChatRequest(model=cell.model, messages=tuple(messages),
                          max_output_tokens=spec.max_output_tokens,
                          context_window=ctx.config.context_window, temperature=temperature,
                          seed=seed,
                          thinking_off=True)
    label = (f"{cell.model} {cell.regime} ep {cell.episode} {spec.kind}"
             + variant_suffix(cell.budget, cell.sample, " "))
    response, wire, attempts, wall_s = send_with_retries(ctx, request, label,
                                                         call_priority(ctx, cell, spec))
    record = {
        "kind": spec.kind, "stage": spec.stage, "model": cell.model, "regime": cell.regime,
        "episode": cell.episode, "messages": messages, "response": response.text,
        "thinking": response.reasoning,
        "prompt_eval_count": response.prompt_tokens, "eval_count": response.output_tokens,
        "done_reason": response.stop_reason, "wall_s": round(wall_s, 4), "attempt": attempts,
        "utc": utc_now(), "backend": ctx.config.backend, "request": wire,
        "timings": response.timings,
        "meta": response.raw_meta, "config_sha256": ctx.config.sha256(),
        "runner_sha256": ctx.runner_sha256,
        "server_work": response.server_work, "prompt_cache": ctx.config.prompt_cache,
    }
    if cell.budget != DEFAULT_BUDGET or cell.sample:
        record.update(budget=cell.budget, sample=cell.sample, seed=request.seed)
    if spec.temperature is not None or spec.seed is not None:
        record.update(temperature=request.temperature, seed=request.seed)
    flagged = CONTROL_TOKENS.search(response.text or "") is not None
    if flagged:
        # the per-call flag: the reply carries chat-template control tokens
        record["control_tokens"] = True
    record["segment" if spec.segment is not None else "question_id"] = \
        spec.segment if spec.segment is not None else spec.question_id
    line = ctx.journal.append(record)
    with ctx.written_lock:
        # for the cell's digest; released when the cell ends
        ctx.written[id(record)] = (record, line)
    ctx.progress.update(calls=1)
    try:
        ctx.template.check(response.text)            # journalled first: the evidence is kept
    except RunAborted:
        # at once, so that no other thread sends a call once the run is judged
        if not ctx.stop.is_set():
            from . import transport
            ctx.stop.set()
            sys.stderr.write("\nstopping: the server's chat template does not match the model; no "
                             f"new calls will be sent; waiting up to {transport.STOP_GRACE_S:g} s "
                             "for the calls in flight\n")
        raise
    return record


# which ones: chosen by this seed among the calls of the complete cells
RECHECK_SEED = CALL_SEED

RECHECK_FILE = "recheck.jsonl"


def recheck_candidates(journal: Journal, manifest: "Manifest", tasks: dict,
                       cells: list[Cell]) -> list[dict]:
    """The journalled calls of the complete cells among `cells`, in cell and plan order (a stable
    list to sample)."""
    regimes, study = run_regimes(manifest.data), folder_study(manifest.data)
    logs: dict = {}
    out = []
    for cell in cells:
        if not is_complete(manifest.data, cell):
            continue
        stream = (cell.model, cell.regime, cell.budget, cell.sample)
        if stream not in logs:
            logs[stream] = journal.cell_records(*stream)
        records = logs[stream].get(cell.episode, {})
        out += [records[spec.kind] for spec in study.plan(regimes[cell.regime],
                                                          tasks["episodes"][cell.episode],
                                                                cell.budget)
                                                                if spec.kind in records]
    return out


def run_recheck(ctx: RunContext, cells: list, k: int, concurrency: int = 1) -> dict:
    """The determinism probe (PROTOCOL.md section 6): re-send k journalled calls chosen by seed,
    exactly as they were sent, up to `concurrency` at once (the run's, so that the server sees them
    as it saw the run's calls), and write each new reply beside the old one in raw/recheck.jsonl as
    it comes (the cell logs are never touched); how many replies changed goes into the manifest.
    Calls already re-checked are not sent again."""
    from concurrent.futures import ThreadPoolExecutor, wait
    from .slots import CallSlots
    candidates = recheck_candidates(ctx.journal, ctx.manifest, ctx.tasks, cells)
    chosen = random.Random(RECHECK_SEED).sample(candidates, min(k, len(candidates)))
    path = ctx.journal.raw_dir / RECHECK_FILE
    done = {}
    if path.exists():
        for line in path.read_bytes().splitlines():
            item = parse_record_line(line)
            if item is not None:
                done.setdefault((item.get("model"), item.get("regime"), item.get("episode"),
                                 item.get("kind"),
                                 record_variant(item)), item)

    def where(first: dict) -> tuple:
        return (first["model"], first["regime"], first["episode"], first["kind"],
                record_variant(first))

    to_send = [first for first in chosen if where(first) not in done]
    sent, sent_lock = [0], threading.Lock()
    if to_send:
        ctx.progress.probing(0, len(to_send))

    def resend(first: dict) -> dict:
        if ctx.stop.is_set():
            raise RunInterrupted("interrupted")
        budget, sample = record_variant(first)
        compaction = call_stage(first) == "compaction"
        request = ChatRequest(model=first["model"], messages=tuple(first["messages"]),
                              max_output_tokens=budget if compaction else ANSWER_NUM_PREDICT,
                              context_window=ctx.config.context_window,
                              temperature=first.get("temperature", ctx.config.temperature),
                              seed=first.get("seed", sample_seed(sample)), thinking_off=True)
        label = (f"{first['model']} {first['regime']} ep {first['episode']} {first['kind']} "
                 "(recheck)")
        response, wire, attempts, wall_s = send_with_retries(ctx, request, label)
        item = {"model": first["model"], "regime": first["regime"], "episode": first["episode"],
                "kind": first["kind"], "first_response": first["response"],
                "first_utc": first.get("utc"),
                "first_server_work": first.get("server_work"), "response": response.text,
                "changed": response.text != first["response"], "utc": utc_now(),
                "wall_s": round(wall_s, 4),
                "attempt": attempts, "request": wire, "server_work": response.server_work,
                "prompt_cache": ctx.config.prompt_cache, "config_sha256": ctx.config.sha256()}
        if (budget, sample) != (DEFAULT_BUDGET, 0):
            item.update(budget=budget, sample=sample)
        ctx.journal.append(item, path)
        with sent_lock:
            sent[0] += 1
            ctx.progress.probing(sent[0], len(to_send))
        return item

    if concurrency > 1 and len(to_send) > 1:
        ctx = dataclasses.replace(ctx, slots=CallSlots(concurrency))
        with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="recheck") as pool:
            futures = [pool.submit(resend, first) for first in to_send]
            wait(futures)
        # every call waited for; the first failure in order
        for first, future in zip(to_send, futures):
            done[where(first)] = future.result()
    else:
        for first in to_send:
            done[where(first)] = resend(first)
    items = []
    for first in chosen:
        item, (budget, sample) = done[where(first)], record_variant(first)
        items.append({"cell": cell_key(item["model"], item["regime"], item["episode"], budget,
                                       sample),
                      "kind": item["kind"], "changed": bool(item["changed"])})
    summary = {"k": k, "seed": RECHECK_SEED, "sent": len(items),
               "changed": sum(i["changed"] for i in items),
               "prompt_cache": ctx.config.prompt_cache, "items": items,
               "file": f"raw/{RECHECK_FILE}"}
    with ctx.manifest._lock:
        ctx.manifest.data["recheck"] = summary
    ctx.manifest.save()
    return summary


def recheck_pending(manifest: "Manifest", k: int) -> bool:
    """Whether the determinism probe still has calls to send (it runs once the cells are complete).
    A merged run's probe is its shards' (merge_rechecks), done where they ran: it has none to
    send."""
    recheck = manifest.data.get("recheck")
    if manifest.data.get("merged_from"):
        return False
    return bool(k) and (recheck is None or recheck.get("k") != k)


def merge_rechecks(rechecks: list[dict | None]) -> dict | None:
    """The shards' determinism probes as one (each shard re-sent calls of its own cells); None if
    none ran."""
    ran = [r for r in rechecks if r]
    if not ran:
        return None
    return {"k": sum(r["k"] for r in ran), "seed": ran[0]["seed"],
            "sent": sum(r["sent"] for r in ran),
            "changed": sum(r["changed"] for r in ran), "prompt_cache": ran[0].get("prompt_cache"),
            "items": [i for r in ran for i in r["items"]], "file": "raw/recheck.jsonl in each "
            "shard folder"}


def planned_kinds(manifest: dict, tasks: dict | None) -> Callable[[Cell], list[str] | None]:
    """cell -> the kinds of its calls in plan order: from the run's task set, or, without it (the
    user's sessions moved, say), as the cell's manifest entry recorded them when it completed; None
    where neither says."""
    regimes, study = run_regimes(manifest), folder_study(manifest)

    def kinds(cell: Cell) -> list[str] | None:
        if tasks is not None:
            if not 0 <= cell.episode < len(tasks["episodes"]):
                return None
            return [spec.kind for spec in study.plan(regimes[cell.regime],
                                                     tasks["episodes"][cell.episode],
                                                     cell.budget)]
        recorded = (manifest["cells"].get(cell_key(*cell)) or {}).get("kinds")
        return recorded if isinstance(recorded, list) and all(isinstance(k,
            str) for k in recorded) else None
    return kinds


def lost_records(journal: Journal, manifest: dict, tasks: dict | None) -> list[tuple[Cell, str]]:
    """The COMPLETE cells whose raw log no longer holds every call of their plan (a log deleted, cut
    short or edited by hand), each with the first call it lacks: work to redo, found without writing
    anything (without the task set, for the cells whose manifest entry records their plan)."""
    kinds_of = planned_kinds(manifest, tasks)
    lost = []
    for model, regime_name, budget, sample in journal_streams(manifest):
        logged = None
        for episode_index in range(manifest["n_episodes"]):
            cell = Cell(model, regime_name, episode_index, budget, sample)
            if not is_complete(manifest, cell):
                continue
            kinds = kinds_of(cell)
            if kinds is None:
                continue
            if logged is None:
                logged = journal.cell_records(model, regime_name, budget, sample)
            records = logged.get(episode_index, {})
            missing = next((kind for kind in kinds if kind not in records), None)
            if missing is not None:
                lost.append((cell, missing))
    return lost


def flagged_cells(journal: Journal, manifest: dict) -> dict[Cell, set[str]]:
    """The cells whose journalled replies carry chat-template control tokens, with those calls'
    kinds: the run sends them again once it stopped for a template mismatch (the manifest's
    `template_stop`)."""
    flagged: dict[Cell, set[str]] = {}
    for model, regime, budget, sample in journal_streams(manifest):
        for record in journal.read(model, regime, budget, sample):
            if record.get("control_tokens") and isinstance(record.get("episode"), int):
                flagged.setdefault(Cell(model, regime, record["episode"], budget, sample),
                                   set()).add(record["kind"])
    return flagged


def repair_journal(journal: Journal, manifest: "Manifest", tasks: dict) -> list[str]:
    """Quarantine unreadable lines (and, after a stop for a template mismatch, every reply that
    carries control tokens); then, in any cell that lost a record that way, or to a log deleted or
    cut short, quarantine every later call that was made from it (the cascade resumes from the last
    good call) and reopen the cell if it was COMPLETE."""
    notes = []
    regimes, study = run_regimes(manifest.data), folder_study(manifest.data)
    short_logs = {(cell.model, cell.regime, cell.budget, cell.sample) for cell, _ in
                  lost_records(journal, manifest.data, tasks)}
    flagged = flagged_cells(journal, manifest.data) if manifest.data.get("template_stop") else {}
    for cell, kinds in flagged.items():
        journal.drop(cell, kinds)
        short_logs.add((cell.model, cell.regime, cell.budget, cell.sample))
    if manifest.data.pop("template_stop", None) is not None:
        moved = sum(map(len, flagged.values()))
        what = (f"{moved} repl{'y' if moved == 1 else 'ies'} carrying chat-template control tokens "
                "moved to "
                f"raw/*.quarantine, to be sent again (the run had stopped for a template mismatch)")
        manifest.data["amendments"].append({"at": utc_now(), "what": what})
        notes.append(what)
    for model, regime_name, budget, sample in journal_streams(manifest.data):
        note = journal.repair(model, regime_name, budget, sample)
        if not note and (model, regime_name, budget, sample) not in short_logs:
            continue
        if note:
            notes.append(note)
        logged = journal.cell_records(model, regime_name, budget, sample)
        episodes = {e for e in logged if isinstance(e, int)} | {
            e for e in range(len(tasks["episodes"])) if is_complete(manifest.data,
            Cell(model, regime_name, e, budget,
                                                                                          sample))}
        for episode_index in sorted(episodes):
            if not 0 <= episode_index < len(tasks["episodes"]):
                continue
            records = logged.get(episode_index, {})
            cell = Cell(model, regime_name, episode_index, budget, sample)
            plan = study.plan(regimes[regime_name], tasks["episodes"][episode_index], budget)
            lost = next((i for i, spec in enumerate(plan) if spec.kind not in records), None)
            if lost is None:
                continue
            stale = {spec.kind for spec in plan[lost + 1:] if spec.kind in records} \
                if plan[lost].stage != "answer" else set()
            if stale:
                journal.drop(cell, stale)
            key = cell_key(*cell)
            if is_complete(manifest.data, cell):
                how = ("to an unreadable line" if note else "from its raw log (deleted, cut short "
                       "or edited)")
                if plan[lost].kind in flagged.get(cell, ()):
                    how = "to raw/*.quarantine: its reply carried chat-template control tokens"
                reason = f"lost {plan[lost].kind} {how}; re-run from {plan[lost].kind}"
                entry = dict(manifest.cell(key), status="FAILED", n_calls=lost, reason=reason,
                             updated_at=utc_now())
                entry.pop("records_sha256", None)
                manifest.set_cell(key, entry)
                manifest.data["amendments"].append({"at": utc_now(),
                                                    "what": f"cell {key} reopened: {reason}"})
                notes.append(f"cell {key} {reason}")
    if notes:
        manifest.save()
    return notes


def schedule(ctx: RunContext, cells: list[Cell], concurrency: int = 1) -> list[Cell]:
    """The order the cells of a run are run in: episode by episode, each episode's cells (every
    budget, sample, model and regime) before the next episode's, so that complete paired episodes
    accumulate at an even pace and a run stopped at any moment can be compared over them. With
    concurrency, the longest cells of an episode go first, so that their cascades, one call at a
    time, start while the shorter cells fill the slots. The order changes no output (each cell
    depends only on its own calls)."""
    episodes = ctx.tasks["episodes"]

    def place(item: tuple[int, Cell]) -> tuple[int, int, int]:
        given, cell = item
        if concurrency == 1:
            return cell.episode, 0, given
        return cell.episode, -len(ctx.study.plan(ctx.regimes[cell.regime], episodes[cell.episode],
                                                 cell.budget)), given
    return [cell for _, cell in sorted(enumerate(cells), key=place)]


def run_cells(ctx: RunContext, cells: list[Cell], concurrency: int) -> dict:
    """Run the given cells, up to `concurrency` calls at once, in the order of `schedule`; calls
    within a cell stay in order."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
    from .slots import CallSlots
    outcome = {"COMPLETE": 0, "FAILED": 0}
    pending = schedule(ctx, cells, concurrency)
    rank = {cell: place for place, cell in enumerate(pending)}
    abort: list[PilotError] = []
    # Up to 2N cells run their cascades; their answers fan out on a pool of 4N threads, so that
    # while some calls'
    # replies are being journalled others can be sent, and a later cell's answers waiting for a slot
    # never hold
    # every thread an earlier cell's answers need; CallSlots keeps at most N calls awaiting the
    # server and gives
    # a freed slot to the waiting call of the earliest cell in the schedule.
    answer_pool = ThreadPoolExecutor(max_workers=4 * concurrency, thread_name_prefix="answer") \
        if concurrency > 1 else None
    writer = ManifestWriter(ctx.manifest)
    ctx = dataclasses.replace(ctx, slots=CallSlots(concurrency), answer_pool=answer_pool,
                              cell_writer=writer,
                              rank=rank)
    open_cells = concurrency if concurrency == 1 else 2 * concurrency
    try:
        with ThreadPoolExecutor(max_workers=open_cells, thread_name_prefix="cell") as pool, \
                answer_pool or contextlib.nullcontext():
            running = set()
            while pending or running:
                while pending and len(running) < open_cells and not ctx.stop.is_set() and not abort:
                    running.add(pool.submit(run_cell, ctx, pending.pop(0)))
                if not running:
                    break
                finished, running = wait(running, timeout=0.2, return_when=FIRST_COMPLETED)
                for future in finished:
                    try:
                        outcome[future.result()] += 1
                    except RunInterrupted:
                        pass
                    except (RunAborted, ServerGone, DiskFull) as err:
                        abort.append(err)
                        ctx.stop.set()
    finally:
        try:
            writer.close()
        except DiskFull as err:
            abort.append(err)
    ctx.progress.update(force=True)
    if abort:
        raise abort[0]
    if ctx.stop.is_set():
        raise RunInterrupted("stopped by signal")
    return outcome


class StopOnSignal:
    """First Ctrl-C or SIGTERM: stop sending new calls, and give the calls in flight STOP_GRACE_S to
    end (the transport then gives them up: they are sent again on resume). Second: drop the calls in
    flight at once."""

    def __init__(self, stop: threading.Event, on_hard_stop: Callable[[], None]):
        self.stop = stop
        self.on_hard_stop = on_hard_stop
        self.previous: dict = {}

    def _handle(self, signum, frame):
        from . import transport
        if self.stop.is_set():
            self.on_hard_stop()
            return
        self.stop.set()
        sys.stderr.write("\nstopping: no new calls will be sent; waiting up to "
                         f"{transport.STOP_GRACE_S:g} s for the calls in flight, which are sent "
                         "again on resume if they do not end by then (press Ctrl-C again to drop "
                         "them now)\n")
        sys.stderr.flush()

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc):
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
        return False
