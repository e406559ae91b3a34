#!/usr/bin/env python3
"""Benchmark: `audit` on a folder of generated agent logs with compactions, stage by stage.

    python3 scripts/bench/bench_audit.py                              # 5, 20 and 100 MB
    python3 scripts/bench/bench_audit.py --sizes 5,20 --max-seconds 120
    python3 scripts/bench/bench_audit.py --huge 50     # one session whose one user turn is 50 MB
    python3 scripts/bench/bench_audit.py --logs /work/shared/real-logs/claude-code   # real logs

For each size it writes, in a temporary folder deleted after, that many megabytes of logs: files of
about 4 MB each, Claude Code logs and Codex CLI rollouts in turn (the seeded coding session of
bench_sessions.py), each compacting every 20 rounds with a summary that keeps some of the values of
the rounds it replaces, changes one, states the standing instruction and claims its last step done.
Then, in a child process of its own (stopped after --max-seconds), it times the audit's stages as
`audit` runs them: reading (walking the folder and reading every file into sessions, once), ground
truth (of each compaction's replaced turns, once), judging (each summary judged and gated, once) and
writing (the analysis, audit.csv, analysis.md and report.html). It prints seconds and MB/s per stage
and seconds per MB at every size, which stay level when the time is linear in the size.

With --huge MB it writes instead one Claude Code session whose one user turn is that many megabytes
of tickets (a paste), a reply and a compaction, runs the `audit` command on it in a child process
and prints its wall time, the child's peak memory (its ru_maxrss) and audit.csv's size against the
log's (issue 41, point 4).

With --logs DIR it reads real logs instead (the development set, /work/shared/real-logs/claude-code,
is read where it lies and never copied): the `audit` command on the whole folder in a child process,
with its wall time, CPU time, MB/s and peak memory (the largest process's ru_maxrss, and the sum of
the process tree's resident memory, sampled every 0.1 s on Linux); then each file audited alone,
one after the other in one more child process and in one process, with its MB/s, which stay level
when the time is linear in the size (issue 40, point 8). """
from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent             # scripts/bench/: bench_sessions.py
SCRIPTS = BENCH.parent                               # scripts/: the runner's package, pilot/
sys.path[:0] = [str(BENCH), str(SCRIPTS)]

import bench_sessions  # noqa: E402  (the seeded session both benchmarks write)

DEFAULT_SIZES = (5, 20, 100)

FILE_MB = 4                             # the size of each generated log

ROUNDS_PER_COMPACTION = 20

STAGES = (("read_s", "reading"), ("truth_s", "ground truth"), ("judge_s", "judging"),
          ("write_s", "writing"))


# --- Generated logs -------------------------------------------------------------------------------
def summary_of(rng: random.Random, k: int) -> str:
    """A summary of rounds up to k: some of their values kept, one amount changed, the rule kept, a
    step claimed."""
    kept = [bench_sessions.story_values(rng, j) for j in range(max(0, k - 6), k)]
    lines = [f"Ticket {v['ticket']} for tenant {v['tenant']}: fixed in {v['path']} at release "
             f"{v['version']}."
             for v in kept[:4]]
    lines.append(f"The ledger was off by $1{rng.randint(0, 9)},000.00 on the last ticket.")
    lines.append("Always run the tests before you commit. The last test run passed.")
    return "\n".join(lines)


def compacted(lines, rng: random.Random, is_reply, compaction):
    """bench_sessions' log lines with its own compactions left out and ours put in after every
    ROUNDS_PER_COMPACTION-th reply of the assistant (the end of a round)."""
    rounds = 0
    for line in lines:
        record = json.loads(line)
        if record.get("type") == "system" or record.get("isCompactSummary"):
            continue
        yield line
        if is_reply(record):
            rounds += 1
            if rounds % ROUNDS_PER_COMPACTION == 0:
                yield from compaction(rng, rounds)


def claude_reply(record: dict) -> bool:
    content = (record.get("message") or {}).get("content")
    return record.get("type") == "assistant" and isinstance(content, list) and \
        all(part.get("type") == "text" for part in content)


def claude_compaction(rng: random.Random, k: int):
    yield json.dumps({"type": "system", "subtype": "compact_boundary",
                      "content": "Conversation compacted",
                      "compactMetadata": {"trigger": rng.choice(("auto", "manual")),
                                          "preTokens": rng.randint(60_000, 190_000)}})
    yield json.dumps({"type": "user", "isCompactSummary": True,
                      "message": {"role": "user", "content": summary_of(rng, k)}})


def codex_reply(record: dict) -> bool:
    payload = record.get("payload") or {}
    return payload.get("type") == "message" and payload.get("role") == "assistant"


def codex_compaction(rng: random.Random, k: int):
    tokens = rng.randint(60_000, 250_000)
    yield json.dumps({"timestamp": "t", "type": "event_msg", "payload": {
        "type": "token_count", "info": {"total_token_usage": {"total_tokens": tokens}}}})
    yield json.dumps({"timestamp": "t", "type": "compacted",
                      "payload": {"message": summary_of(rng, k)}})
    yield json.dumps({"timestamp": "t", "type": "event_msg",
                      "payload": {"type": "context_compacted"}})


def claude_log(rng: random.Random, target: int):
    return compacted(bench_sessions.claude_lines(rng, target), rng, claude_reply, claude_compaction)


def codex_log(rng: random.Random, target: int):
    return compacted(bench_sessions.codex_lines(rng, target), rng, codex_reply, codex_compaction)


def write_logs(folder: Path, megabytes: float, seed: int = 32) -> int:
    """Files of about FILE_MB each, up to `megabytes` in all; their bytes."""
    total, k = 0, 0
    while total < megabytes * 2 ** 20:
        rng = random.Random(seed + k)
        size = min(FILE_MB * 2 ** 20, int(megabytes * 2 ** 20) - total)
        fmt = ("claude-code", "codex")[k % 2]
        path = folder / f"{k:03d}-{fmt}.jsonl"
        with path.open("w", encoding="utf-8") as handle:
            for line in (claude_log if fmt == "claude-code" else codex_log)(rng, size):
                handle.write(line + "\n")
        total += path.stat().st_size
        k += 1
    return total


def write_huge(path: Path, megabytes: float, seed: int = 41) -> int:
    """One session: a user turn of `megabytes` of tickets, a reply, a compaction; its bytes."""
    rng, pieces, size, k = random.Random(seed), [], 0, 0
    while size < megabytes * 2 ** 20:
        v = bench_sessions.story_values(rng, k)
        pieces.append(f"Ticket {v['ticket']} for tenant {v['tenant']}: the ledger is off by "
                      f"{v['amount']}. Check {v['path']} against release {v['version']} (commit "
                      f"{v['digest']}).\n")
        size, k = size + len(pieces[-1]), k + 1
    base = {"sessionId": "huge", "timestamp": "2026-03-14T09:12:08.000Z", "isSidechain": False}
    records = [{**base, "uuid": "u1", "type": "user", "message": {
                    "role": "user", "content": "Always run the tests before you commit. The "
                    "export:\n" + "".join(pieces)}},
               {**base, "uuid": "u2", "type": "assistant", "message": {
                    "id": "m2", "role": "assistant",
                    "content": [{"type": "text", "text": "Read."}]}},
               *claude_compaction(rng, 4)]
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write((record if isinstance(record, str) else json.dumps(record)) + "\n")
    return path.stat().st_size


def huge(megabytes: float, max_s: float) -> int:
    """`audit` on one session with one huge user turn: wall time, peak memory, audit.csv's size."""
    with tempfile.TemporaryDirectory(prefix="bench-audit-huge-") as tmp:
        log, out = Path(tmp) / "huge.jsonl", Path(tmp) / "out"
        size = write_huge(log, megabytes)
        print(f"{size / 2 ** 20:.1f} MB written (one user turn); running audit ...", flush=True)
        started = time.perf_counter()
        done = subprocess.run([sys.executable, str(SCRIPTS / "run_pilot.py"), "audit", str(log),
                               "--out", str(out)], capture_output=True, text=True, timeout=max_s)
        wall = time.perf_counter() - started
        # ru_maxrss: the largest child waited for, in KiB on Linux
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2 ** 10
        if done.returncode != 0:
            print(f"audit failed: {(done.stderr.strip().splitlines() or ['no output'])[-1]}")
            return 1
        csv = (out / "audit.csv").stat().st_size
        print(f"| log MB | wall s | peak MB (ru_maxrss) | audit.csv MB | csv / log | "
              f"progress lines |\n| --- | --- | --- | --- | --- | --- |\n"
              f"| {size / 2 ** 20:.1f} | {wall:.1f} | {peak:.0f} | {csv / 2 ** 20:.2f} | "
              f"{csv / size:.3f} | {progress_lines(done.stderr)} |")
    return 0


def progress_lines(stderr: str) -> int:
    return sum(line.startswith("  ") for line in stderr.splitlines())


# --- Real logs: the command on a folder, then each file alone ------------------------------------
def tree_rss(pid: int) -> int:
    """The resident bytes of a process and its descendants, from /proc (0 where there is none)."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry.name)] = int(fields[1])
        rss[int(entry.name)] = int(fields[21]) * resource.getpagesize()
    tree, grown = {pid}, True
    while grown:
        more = {p for p, parent in parents.items() if parent in tree} - tree
        tree, grown = tree | more, bool(more)
    return sum(rss.get(p, 0) for p in tree)


def audit_folder(folder: Path, max_s: float) -> dict:
    """The `audit` command on a folder in a child process: wall and CPU seconds, the largest
    process's peak memory and the process tree's sampled peak."""
    with tempfile.TemporaryDirectory(prefix="bench-audit-logs-") as tmp:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        child = subprocess.Popen([sys.executable, str(SCRIPTS / "run_pilot.py"), "audit",
                                  str(folder), "--out", str(Path(tmp) / "out"), "--quiet"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        peak_tree, sampled = 0, Path("/proc").is_dir()
        while child.poll() is None:
            if time.perf_counter() - started > max_s:
                child.kill()
                child.wait()
                return {"error": f"stopped after {max_s:g} s"}
            if sampled:
                peak_tree = max(peak_tree, tree_rss(child.pid))
            time.sleep(0.1)
        wall = time.perf_counter() - started
        out, err = child.communicate()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if child.returncode != 0:
            return {"error": (err.strip().splitlines() or ["no output"])[-1]}
    return {"wall_s": wall, "cpu_s": after.ru_utime + after.ru_stime - before.ru_utime
            - before.ru_stime, "peak_mb": after.ru_maxrss / 2 ** 10,
            "tree_mb": peak_tree / 2 ** 20 if sampled else None,
            "headline": out.strip().splitlines()[0] if out.strip() else ""}


def measure_files(folder: Path) -> None:
    """Each log file of a folder read and audited alone, in this one process: a JSON line each."""
    import pilot.studies  # noqa: F401  (registers the studies)
    from pilot.studies.sessions import audit
    files, _, _ = audit.log_files([folder])
    for path, shown in files:
        started = time.perf_counter()
        sessions, read = audit.read_logs([(path, shown)], [])
        records = audit.audit_sessions(sessions)
        print(json.dumps({"file": shown, "bytes": path.stat().st_size, "sessions": len(sessions),
                          "compactions": len(records), "s": time.perf_counter() - started}),
              flush=True)


def real_logs(folder: Path, max_s: float) -> int:
    """--logs: the command on the whole folder, then each file alone (linearity)."""
    from pilot.studies.sessions import audit
    files, _, _ = audit.log_files([folder])
    size = sum(path.stat().st_size for path, _ in files) / 2 ** 20
    print(f"{folder}: {size:.1f} MB in {len(files)} log files; running audit on the folder "
          f"(processes: {audit.usable_processes()}) ...", flush=True)
    r = audit_folder(folder, max_s)
    if "error" in r:
        print(f"audit failed: {r['error']}")
        return 1
    tree = f"{r['tree_mb']:.0f}" if r["tree_mb"] is not None else "-"
    print(f"{r['headline']}\n\n| MB | wall s | CPU s | MB/s | peak MB (largest process, "
          f"ru_maxrss) | peak MB (process tree, sampled) |\n| --- | --- | --- | --- | --- | --- |"
          f"\n| {size:.1f} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {size / r['wall_s']:.2f} | "
          f"{r['peak_mb']:.0f} | {tree} |", flush=True)
    print("\neach file audited alone, in one process ...", flush=True)
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--measure-files",
                           str(folder)], capture_output=True, text=True, timeout=max_s)
    if done.returncode != 0:
        print(f"failed: {(done.stderr.strip().splitlines() or ['no output'])[-1]}")
        return 1
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    print("| file | MB | compactions | s | MB/s | s per MB |\n" + "| --- " * 6 + "|")
    for row in sorted(rows, key=lambda row: row["bytes"]):
        mb = row["bytes"] / 2 ** 20
        print(f"| {row['file']} | {mb:.2f} | {row['compactions']} | {row['s']:.2f} | "
              f"{mb / row['s']:.2f} | {row['s'] / mb:.3f} |")
    rates = sorted(row["bytes"] / 2 ** 20 / row["s"] for row in rows if row["s"] > 0)
    total_mb, total_s = sum(r["bytes"] for r in rows) / 2 ** 20, sum(r["s"] for r in rows)
    if rates:
        print(f"\n{len(rows)} files alone: {total_mb:.1f} MB in {total_s:.1f} s, "
              f"{total_mb / total_s:.2f} MB/s; per file {rates[0]:.2f} (slowest), "
              f"{rates[len(rates) // 2]:.2f} (median), {rates[-1]:.2f} (fastest) MB/s")
    return 0


# --- The measured stages (in a child process) -----------------------------------------------------
def measure(folder: Path, out: Path) -> None:
    """Each stage's seconds, printed as a JSON line the moment it ends."""
    import pilot.studies  # noqa: F401  (registers the studies)
    from pilot.audit_command import OUTPUTS
    from pilot.runfolder import write_atomic
    from pilot.studies.sessions import audit, audit_report as report
    started = time.perf_counter()
    files, skipped, passed = audit.log_files([folder])
    sessions, read = audit.read_logs(files, skipped)
    read.update(sessions=len(sessions), passed=passed, skipped=skipped)
    now = time.perf_counter()
    print(json.dumps({"read_s": now - started, "files": len(files), "sessions": len(sessions)}),
          flush=True)
    spans = [(s, session, k, audit.replaced_turns(session, k)) for s, session,
             k in audit.compaction_events(sessions)]
    truths = [audit.span_truth(turns) for *_, turns in spans]
    then, now = now, time.perf_counter()
    print(json.dumps({"truth_s": now - then, "compactions": len(spans),
                      "values": sum(len(t["values"]) for t, *_ in truths)}), flush=True)
    records = []
    for (s, session, k, turns), (truth, source, written) in zip(spans, truths):
        event = session["compactions"][k]
        records.append({"session": s + 1, "file": session["file"], "format": session["format"],
                        "n": event["n"],
                        "trigger": event["trigger"], "tokens_before": event["tokens_before"],
                        "tokens_after": event["tokens_after"], "source": event["source"],
                        "kept_turns": 0,
                        "scored": True, "why": None, "counts": audit.span_counts(turns, truth),
                        "rows": audit.judge_summary(truth, source, event["summary"], written)})
    then, now = now, time.perf_counter()
    print(json.dumps({"judge_s": now - then, "rows": sum(len(r["rows"]) for r in records)}),
          flush=True)
    analysis = audit.analyze_audit(records, read)
    out.mkdir(parents=True, exist_ok=True)
    for name, text in zip(OUTPUTS, (report.render_audit_csv(records),
                                    report.render_audit_md(analysis),
                                    report.render_audit_html(analysis))):
        write_atomic(out / name, text.encode("utf-8"))
    then, now = now, time.perf_counter()
    print(json.dumps({"write_s": now - then}), flush=True)


def child(folder: Path, out: Path, max_s: float) -> dict:
    command = [sys.executable, str(Path(__file__).resolve()), "--measure", str(folder), "--out",
               str(out)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=max_s)
        lines, stopped = done.stdout, None
        if done.returncode != 0:
            return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
    except subprocess.TimeoutExpired as timeout:
        lines = timeout.stdout.decode() if isinstance(timeout.stdout,
                                                      bytes) else timeout.stdout or ""
        stopped = max_s
    result = {"stopped_after_s": stopped} if stopped else {}
    for line in lines.splitlines():
        result.update(json.loads(line))
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)),
                        help="total log sizes in MB, comma-separated (default 5,20,100)")
    parser.add_argument("--max-seconds", type=float, default=600.0,
                        help="stop a size's measurement after this many seconds (default 600)")
    parser.add_argument("--huge", type=float,
                        help="instead: one session whose one user turn is this many MB")
    parser.add_argument("--logs", help="instead: audit this folder of real logs (the command "
                        "on the whole folder, then each file alone)")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--measure-files", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        measure(Path(args.measure), Path(args.out))
        return 0
    if args.measure_files:
        measure_files(Path(args.measure_files))
        return 0
    if args.logs:
        return real_logs(Path(args.logs), args.max_seconds)
    if args.huge:
        return huge(args.huge, args.max_seconds)
    try:
        sizes = [float(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        parser.error(f"--sizes takes numbers separated by commas (got {args.sizes!r})")
    if not sizes or min(sizes) <= 0:
        parser.error("--sizes takes positive numbers")
    print(f"logs of about {FILE_MB} MB each, Claude Code and Codex in turn, a compaction every "
          f"{ROUNDS_PER_COMPACTION} rounds; one child process per size (stopped after "
          f"{args.max_seconds:g} s)",
          flush=True)
    rows = []
    for megabytes in sizes:
        with tempfile.TemporaryDirectory(prefix="bench-audit-") as tmp:
            logs = Path(tmp) / "logs"
            logs.mkdir()
            size = write_logs(logs, megabytes) / 2 ** 20
            print(f"{size:.1f} MB written; measuring ...", flush=True)
            rows.append((size, child(logs, Path(tmp) / "out", args.max_seconds)))
    print("\n| MB | files | compactions | values | rows | " + " | ".join(f"{name} s (MB/s)" for _,
        name in STAGES)
          + " | total s (MB/s) | s per MB |")
    print("| --- " * (7 + len(STAGES)) + "|")
    for size, r in rows:
        if "error" in r:
            print(f"| {size:.1f} | {r['error']} |" + " |" * (6 + len(STAGES)))
            continue
        stopped = f"stopped after {r['stopped_after_s']:g} s" if r.get("stopped_after_s") else "-"
        cells = [f"{size:.1f}"] + [f"{r[k]:,}" if k in r else "-" for k in ("files", "compactions",
            "values", "rows")]
        cells += [f"{r[k]:.2f} ({size / r[k]:.1f})" if k in r else stopped for k, _ in STAGES]
        total = sum(r.get(k, 0) for k, _ in STAGES)
        done = all(k in r for k, _ in STAGES)
        cells += [f"{total:.2f} ({size / total:.1f})" if done else stopped,
                  f"{total / size:.3f}" + ("" if done else " (stages done only)")]
        print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
