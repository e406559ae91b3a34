#!/usr/bin/env python3
"""Benchmark: reading a long session log and taking its ground truth, as the sessions study does
before any call.

    python3 scripts/bench/bench_sessions.py                      # 5, 20 and 50 MB Claude Code logs
    python3 scripts/bench/bench_sessions.py --sizes 5,20 --format codex --max-seconds 120
    python3 scripts/bench/bench_sessions.py --sizes 1,5 --judge  # and judging a state, and the gate

For each size it writes a synthetic log of that many megabytes in the chosen format (a seeded coding
session: the user's requests with ids, amounts and versions, the assistant's replies and tool calls,
file listings and test runs as results, about one failed step in twenty and one refusal in a
hundred, a compaction every few hundred turns), then times, in a child process of its own (so that a
stage that runs too long can be stopped), the stages the study runs: reading the file into turns;
rendering the turns and cutting them into segments that fit the context window (the size checks);
and the ground truth (exact values, standing instructions, failed and denied steps). It prints MB/s
for each stage and for reading plus ground truth, and the seconds per MB at every size, which stay
level when the time is linear in the size; and the CPU seconds of reading plus ground truth (on a
machine others share, the wall-clock figures grow with their load; the CPU seconds much less). With
--judge it also times, in CPU seconds, judging a state against the ground truth and the release gate
over it with the whole transcript as its source, as an audit of a compaction runs them. The study's
own progress line shows on stderr while a large log is read.

The ground-truth rules are studies/sessions/truth.py's, as they are in this checkout; the figures in
scripts/BENCHMARKS.md say which rules they were measured with. """
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[1]        # scripts/: the runner's package, pilot/
sys.path.insert(0, str(SCRIPTS))

DEFAULT_SIZES = (5, 20, 50)

DEFAULT_WINDOW = 262_144                # a window at which a 50 MB log fits in 200 segments

TOOLS = ("Bash", "Read", "Edit", "Grep")


# --- A synthetic session --------------------------------------------------------------------------
def story_values(rng: random.Random, k: int) -> dict:
    return {
        "ticket": f"LS-{2000 + k % 900}",
        "tenant": f"ACME-{4000 + k % 500}",
        "amount": f"${rng.randint(10, 99999):,}.{rng.randint(0, 99):02d}",
        "version": f"{rng.randint(1, 9)}.{rng.randint(0, 20)}.{rng.randint(0, 30)}",
        "path": f"services/{rng.choice(('ledger', 'billing', 'proxy', 'export'))}/mod_{k % 37}.py",
        "digest": "".join(rng.choice("0123456789abcdef") for _ in range(7)),
    }


def listing(rng: random.Random, path: str, lines: int) -> str:
    first = rng.randint(1, 400)
    body = [f"{first + i:>4}  {'    ' * (i % 3)}total += Decimal(entry.amount)  # row "
            f"{rng.randint(100, 9999)}"
            for i in range(lines)]
    return f"{path}\n" + "\n".join(body)


def turns_of(rng: random.Random, k: int):
    """One round of the story: (kind, payload) items in the order a log holds them."""
    v = story_values(rng, k)
    yield "user", (f"Ticket {v['ticket']} for tenant {v['tenant']}: the ledger is off by "
                   f"{v['amount']}. Check "
                   f"{v['path']} against release {v['version']}." + (" From now on, always run the "
                   "tests before "
                                                                       "you commit." if k % 50
                                                                       == 0 else ""))
    for step in range(rng.randint(2, 5)):
        tool = rng.choice(TOOLS)
        command = {"Bash": {"command": f"pytest tests/test_{k % 37}.py -q",
                            "description": "run the tests"},
                   "Read": {"file_path": f"/repo/{v['path']}"},
                   "Edit": {"file_path": f"/repo/{v['path']}", "old_string": "float(x)",
                            "new_string": "Decimal(x)"},
                   "Grep": {"pattern": "float(", "path": "services"}}[tool]
        yield "call", (f"Looking at {v['path']} ({step + 1}).", tool, command)
        roll = rng.random()
        if roll < 0.01:
            yield "result", ("Claude requested permissions to use Bash, but you haven't granted "
                             "it yet.", True)
        elif roll < 0.06:
            yield "result", (f"Exit code 1\nFAILED tests/test_{k % 37}.py::test_total - "
                             "AssertionError: "
                             f"{v['amount']} != $0.00\n1 failed, {rng.randint(3, 90)} passed in "
                             f"0.{rng.randint(10, 99)}s", True)
        else:
            yield "result", (listing(rng, v["path"], rng.randint(20, 90)), False)
    yield "reply", f"Fixed in {v['path']} as commit {v['digest']}; {v['ticket']} can close."


def claude_lines(rng: random.Random, target: int):
    """Claude Code JSONL lines up to `target` bytes."""
    written, k, n = 0, 0, 0
    while written < target:
        for kind, payload in turns_of(rng, k):
            n += 1
            base = {"uuid": f"u{n}", "sessionId": "bench", "timestamp": "2026-03-14T09:12:08.000Z",
                    "isSidechain": False}
            if kind == "user":
                line = {**base, "type": "user", "message": {"role": "user", "content": payload}}
            elif kind == "call":
                text, tool, arguments = payload
                line = {**base, "type": "assistant", "message": {"id": f"m{n}", "role": "assistant",
                    "content": [
                    {"type": "text", "text": text}, {"type": "tool_use", "id": f"t{n}",
                                                     "name": tool,
                                                     "input": arguments}]}}
            elif kind == "result":
                line = {**base, "type": "user", "message": {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": f"t{n - 1}", "content": payload[0],
                     "is_error": payload[1]}]}}
            else:
                line = {**base, "type": "assistant", "message": {"id": f"m{n}", "role": "assistant",
                                                                   "content": [{"type": "text",
                                                                   "text": payload}]}}
            text = json.dumps(line)
            written += len(text) + 1
            yield text
        k += 1
        if k % 300 == 0:
            yield json.dumps({"type": "system", "subtype": "compact_boundary",
                              "content": "Conversation compacted",
                              "compactMetadata": {"trigger": "auto", "preTokens": 150000 + k}})
            yield json.dumps({"type": "user", "isCompactSummary": True, "message": {
                "role": "user", "content": f"Summary so far: {k} rounds, tickets handled."}})


def codex_lines(rng: random.Random, target: int):
    """Codex CLI rollout lines (payload layout) up to `target` bytes."""
    written, k, n = 0, 0, 0
    yield json.dumps({"timestamp": "t", "type": "session_meta",
                      "payload": {"id": "bench", "cli_version": "0.63.0"}})
    while written < target:
        for kind, payload in turns_of(rng, k):
            n += 1
            if kind == "user":
                item = {"type": "message", "role": "user", "content": [{"type": "input_text",
                    "text": payload}]}
            elif kind == "call":
                item = {"type": "function_call", "name": "shell_command", "call_id": f"c{n}",
                        "arguments": json.dumps({"command": json.dumps(payload[2])})}
            elif kind == "result":
                code = 1 if payload[1] else 0
                item = {"type": "function_call_output", "call_id": f"c{n - 1}",
                        "output": f"Exit code: {code}\nWall time: 0.4 "
                        f"seconds\nOutput:\n{payload[0]}"}
            else:
                item = {"type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": payload}]}
            text = json.dumps({"timestamp": "t", "type": "response_item", "payload": item})
            written += len(text) + 1
            yield text
            yield json.dumps({"timestamp": "t", "type": "event_msg",
                              "payload": {"type": "token_count", "info": {}}})
        k += 1


def write_log(path: Path, megabytes: float, fmt: str, seed: int = 35) -> int:
    rng = random.Random(seed)
    lines = (claude_lines if fmt == "claude-code" else codex_lines)(rng, int(megabytes * 2 ** 20))
    with path.open("w", encoding="utf-8") as handle:
        for line in lines:
            handle.write(line + "\n")
    return path.stat().st_size


# --- The measured stages (in a child process) -----------------------------------------------------
def measure(path: Path, window: int, judge: bool = False) -> None:
    """Seconds for each stage the study runs on one file, as read_sessions runs them, printed as a
    JSON line the moment each stage ends (so that a stage stopped for its time leaves the ones
    before it measured)."""
    import pilot.studies  # noqa: F401  (registers the studies)
    from pilot.studies.sessions import design as ss, readers as formats
    started, cpu = time.perf_counter(), time.process_time()
    (session,) = formats.read_session_file(path, path.name)
    read, read_cpu = time.perf_counter(), time.process_time()
    print(json.dumps({"read_s": read - started, "read_cpu_s": read_cpu - cpu,
                      "turns": len(session["turns"]),
                      "compactions": len(session["compactions"])}), flush=True)
    parts = [ss.turn_parts(turn) for turn in session["turns"]]
    rendered = ["\n".join(text for _, text in turn) for turn in parts]
    cut = ss.plan_segments(session, rendered, ss.DEFAULT_SEGMENTS, window, "even", [])
    sized, sized_cpu = time.perf_counter(), time.process_time()
    print(json.dumps({"size_s": sized - read, "size_cpu_s": sized_cpu - read_cpu,
                      "segments": len(cut["starts"])}),
          flush=True)
    episode = ss.build_episode(0, session, parts, rendered, cut, [])
    truth, truth_cpu = time.perf_counter(), time.process_time()
    print(json.dumps({"truth_s": truth - sized, "truth_cpu_s": truth_cpu - sized_cpu,
                      "values": len(episode["values"]),
                      "steps": len(episode["steps"])}), flush=True)
    if judge:
        judge_and_gate(episode, rendered)


def judge_and_gate(episode: dict, rendered: list[str]) -> None:
    """CPU seconds of judging one state against the ground truth (judge_state) and of the release
    gate over it with the whole transcript as its source (gate.check_state), as an audit of a
    compaction runs them: the state gives every 50th value, one changed, and claims the tests
    passed."""
    from pilot.rules import gate
    from pilot.studies.sessions.truth import judge_state
    facts = episode["values"][::50]
    lines = [f"- {' '.join(f['referent'][:2]) or 'value'}: {f['text']}" for f in facts]
    state = ("## Progress\n" + "\n".join(lines) + "\nTests pass; pushed the fix.\nAlways run the "
             "tests before you commit.")
    truth = {key: episode[key] for key in ("values", "instructions", "steps")}
    started = time.process_time()
    judge_state(truth, state)
    judged = time.process_time()
    ledger = gate.normalize_ledger({"entities": {}, "items": [], "name_pattern": r"(?!)",
                                    "accepted_instructions": []})
    gate.check_state(state, ledger, "\n".join(rendered))
    print(json.dumps({"judge_cpu_s": judged - started, "gate_cpu_s": time.process_time() - judged,
                      "source_mb": sum(len(text) + 1 for text in rendered) / 2 ** 20}), flush=True)


def child(path: Path, window: int, max_s: float, judge: bool = False) -> dict:
    """measure() in a process of its own, stopped after max_s seconds; the stages it finished."""
    command = [sys.executable, str(Path(__file__).resolve()), "--measure", str(path),
               "--context-window", str(window)]
    command += ["--judge"] * judge
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=max_s)
        out, err, stopped = done.stdout, done.stderr, None
        if done.returncode != 0:
            return {"error": (err.strip().splitlines() or ["no output"])[-1]}
    except subprocess.TimeoutExpired as timeout:
        out = timeout.stdout.decode() if isinstance(timeout.stdout, bytes) else timeout.stdout or ""
        err = timeout.stderr.decode() if isinstance(timeout.stderr, bytes) else timeout.stderr or ""
        stopped = max_s
    sys.stderr.write(err)
    result = {"stopped_after_s": stopped} if stopped else {}
    for line in out.splitlines():
        result.update(json.loads(line))
    return result


def rate(megabytes: float, seconds: float | None) -> str:
    return f"{megabytes / seconds:.1f}" if seconds else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)),
                        help="log sizes in MB, comma-separated (default 5,20,50)")
    parser.add_argument("--format", choices=("claude-code", "codex"), default="claude-code")
    parser.add_argument("--context-window", type=int, default=DEFAULT_WINDOW)
    parser.add_argument("--max-seconds", type=float, default=600.0,
                        help="stop a size's measurement after this many seconds (default 600)")
    parser.add_argument("--judge", action="store_true",
                        help="also time judging a state and the release gate over it with the "
                        "transcript as its source")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        measure(Path(args.measure), args.context_window, args.judge)
        return 0
    try:
        sizes = [float(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        sizes = []
    # (nan and inf fail this too)
    if not sizes or not all(0 < size <= 10_000 for size in sizes):
        parser.error("--sizes takes sizes in MB above 0 and up to 10000, separated by commas "
                     f"(got {args.sizes!r})")
    print(f"format {args.format}, context window {args.context_window:,} tokens, one child process "
          "per size "
          f"(stopped after {args.max_seconds:g} s)", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-sessions-") as tmp:
        for megabytes in sizes:
            path = Path(tmp) / f"session-{megabytes:g}mb.{'jsonl'}"
            size = write_log(path, megabytes, args.format) / 2 ** 20
            print(f"{size:.1f} MB written ({path.name}); measuring ...", flush=True)
            result = child(path, args.context_window, args.max_seconds, args.judge)
            rows.append((size, result))
            os.remove(path)
    print("\n| MB | turns | values | failed or denied steps | read s (MB/s) | render and size "
          "checks s (MB/s) | ground truth s (MB/s) | read + ground truth s (MB/s) | s per MB | "
          "read + ground truth, CPU s (MB/s) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for size, r in rows:
        if "error" in r:
            print(f"| {size:.1f} | {r['error']} | | | | | | | |")
            continue
        stopped = f"stopped after {r['stopped_after_s']:g} s" if r.get("stopped_after_s") else "-"
        cells = [f"{size:.1f}", f"{r['turns']:,}" if "turns" in r else "-",
                 f"{r['values']:,}" if "values" in r else "-", f"{r['steps']:,}" if "steps" in r
                 else "-"]
        for stage in ("read_s", "size_s", "truth_s"):
            cells.append(f"{r[stage]:.2f} ({rate(size, r[stage])})" if stage in r else stopped)
        if "truth_s" in r:
            total = r["read_s"] + r["size_s"] + r["truth_s"]
            cells += [f"{total:.2f} ({rate(size, total)})", f"{total / size:.3f}"]
            cpu = sum(r.get(k, 0) for k in ("read_cpu_s", "size_cpu_s", "truth_cpu_s"))
            cells.append(f"{cpu:.2f} ({rate(size, cpu)})" if "truth_cpu_s" in r else "-")
        else:
            cells += [stopped, f"{(r.get('read_s', 0) + r.get('size_s', 0)) / size:.3f} (reading "
                      "only)", "-"]
        print("| " + " | ".join(cells) + " |")
    if args.judge:
        print("\n| MB | transcript MB | judge_state, CPU s | gate over the transcript, CPU s "
              "(MB/s) |")
        print("| --- | --- | --- | --- |")
        for size, r in rows:
            if "gate_cpu_s" in r:
                print(f"| {size:.1f} | {r['source_mb']:.1f} | {r['judge_cpu_s']:.2f} | "
                      f"{r['gate_cpu_s']:.2f} ({rate(r['source_mb'], r['gate_cpu_s'])}) |")
            else:
                print(f"| {size:.1f} | - | {r.get('error') or 'stopped'} | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
