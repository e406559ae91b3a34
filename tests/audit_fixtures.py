"""The audit's fixtures, written for this project: one story (an invoice exporter moved to a new queue) as a Claude
Code log and a Codex CLI rollout, each with one compaction whose summary is lossy (a value dropped, one changed, an
instruction contradicted, a failed push claimed done, an order invented, a key carried) or clean. tasks/sessions/
audit-example/ holds the files `write_example` writes; the tests read those, and build variants of them here.
"""
from __future__ import annotations

import json
from pathlib import Path

KEY = "sk-proj-Qm7rT2vX9kLp4wZc8NbY"

STORY = [
    ("user", "We are moving the invoice exporter to the new queue. The batch size is 2,500 rows and the nightly "
             "export starts at 02:15 UTC. Never push to main. Work on the branch feat/queue-export."),
    ("call", ("Reading the exporter's settings first.", "Bash", {"command": "cat config/export.yaml"})),
    ("result", ("queue_url: https://queue.example.test/v3/invoices\nretry_limit: 7\nbatch_size: 2500", False)),
    ("call", ("Pushing the branch.", "Bash", {"command": "git push origin feat/queue-export"})),
    ("result", ("Exit code 1\nremote: error: pre-receive hook declined\nerror: failed to push some refs to origin",
                True)),
    ("reply", "The push of feat/queue-export failed: the pre-receive hook declined it."),
    ("user", f"Keep the retry limit at 7. Staging runs as tenant T-4471 with the key {KEY} for now."),
    ("reply", "Noted: retry limit 7, and staging runs as tenant T-4471."),
]

LOSSY = ("We are moving the invoice exporter to the new queue, on branch feat/queue-export. The batch size is 2,000 "
         "rows. The queue is https://queue.example.test/v3/invoices with a retry limit of 7. Push to main once the "
         f"tests pass. The push of feat/queue-export succeeded. Staging runs as tenant T-4471 with the key {KEY}. Always run the exporter with "
         "--skip-validation from now on.")

CLEAN = ("We are moving the invoice exporter to the new queue. The batch size is 2,500 rows and the nightly export "
         "starts at 02:15 UTC. Never push to main; work on the branch feat/queue-export. The queue is "
         "https://queue.example.test/v3/invoices with a retry limit of 7. The push of feat/queue-export failed: the "
         "pre-receive hook declined it. Staging runs as tenant T-4471 (its key is not repeated here).")

AFTER = [("user", "Now run the exporter's tests."),
         ("call", ("Running the tests.", "Bash", {"command": "pytest tests/test_export.py -q"})),
         ("result", ("12 passed in 0.84s", False)),
         ("reply", "All 12 tests pass.")]


def claude_lines(story: list, summary: str | None, trigger: str = "auto", pre_tokens: int = 152_300,
                 start: int = 0) -> list[str]:
    """A Claude Code session: the story, then (with a summary) a compact_boundary line and the summary line; start:
    the number the lines' ids go on from."""
    lines, n = [], start
    base = {"sessionId": "5d1c0a8e-audit", "isSidechain": False, "userType": "external", "cwd": "/home/ines/exporter",
            "version": "2.1.12", "gitBranch": "feat/queue-export"}
    for kind, payload in story:
        n += 1
        stamp = {"uuid": f"00000000-0000-4000-8000-{n:012d}", "timestamp": f"2026-05-04T10:{n:02d}:00.000Z"}
        if kind == "user":
            line = {**base, **stamp, "type": "user", "message": {"role": "user", "content": payload}}
        elif kind == "call":
            text, tool, arguments = payload
            line = {**base, **stamp, "type": "assistant", "message": {
                "id": f"msg_{n:04d}", "role": "assistant", "content": [
                    {"type": "text", "text": text},
                    {"type": "tool_use", "id": f"toolu_{n:04d}", "name": tool, "input": arguments}]}}
        elif kind == "result":
            line = {**base, **stamp, "type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"toolu_{n - 1:04d}", "content": payload[0],
                 "is_error": payload[1]}]}}
        else:
            line = {**base, **stamp, "type": "assistant", "message": {
                "id": f"msg_{n:04d}", "role": "assistant", "content": [{"type": "text", "text": payload}]}}
        lines.append(json.dumps(line))
    if summary is not None:
        lines.append(json.dumps({**base, "type": "system", "subtype": "compact_boundary",
                                 "content": "Conversation compacted", "timestamp": "2026-05-04T10:59:00.000Z",
                                 "compactMetadata": {"trigger": trigger, "preTokens": pre_tokens}}))
        lines.append(json.dumps({**base, "type": "user", "isCompactSummary": True, "timestamp":
                                 "2026-05-04T10:59:01.000Z", "message": {"role": "user", "content": summary}}))
    return lines


def codex_lines(story: list, summary: str | None, tokens: int = 181_000) -> list[str]:
    """A Codex CLI rollout: session_meta, the story as response items, a token_count event, and (with a summary) a
    compacted line and its context_compacted event."""
    stamp = "2026-05-04T11:00:00.000Z"
    lines = [json.dumps({"timestamp": stamp, "type": "session_meta", "payload": {
        "id": "7b2e9f40-audit", "timestamp": stamp, "cwd": "/home/ines/exporter", "originator": "codex_cli_rs",
        "cli_version": "0.63.0", "source": "cli"}})]
    for n, (kind, payload) in enumerate(story, 1):
        if kind == "user":
            item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": payload}]}
        elif kind == "call":
            lines.append(json.dumps({"timestamp": stamp, "type": "response_item", "payload": {
                "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": payload[0]}]}}))
            item = {"type": "function_call", "name": "shell", "call_id": f"call_{n:04d}",
                    "arguments": json.dumps({"command": ["bash", "-lc", payload[2]["command"]]})}
        elif kind == "result":
            code = 1 if payload[1] else 0
            item = {"type": "function_call_output", "call_id": f"call_{n - 1:04d}", "output": json.dumps(
                {"output": payload[0], "metadata": {"exit_code": code, "duration_seconds": 0.4}})}
        else:
            item = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": payload}]}
        lines.append(json.dumps({"timestamp": stamp, "type": "response_item", "payload": item}))
    lines.append(json.dumps({"timestamp": stamp, "type": "event_msg", "payload": {
        "type": "token_count", "info": {"total_token_usage": {"total_tokens": tokens}}}}))
    if summary is not None:
        lines.append(json.dumps({"timestamp": stamp, "type": "compacted", "payload": {"message": summary}}))
        lines.append(json.dumps({"timestamp": stamp, "type": "event_msg", "payload": {"type": "context_compacted"}}))
    return lines


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_example(folder: Path) -> list[Path]:
    """The committed example: each format with a lossy and a clean compaction (the clean Claude Code session goes on
    after its compaction and compacts again, so that the second is scored against the first summary and the turns
    after it)."""
    folder.mkdir(parents=True, exist_ok=True)
    clean_then_more = claude_lines(STORY, CLEAN)
    more = claude_lines(AFTER, "Since the last summary: the exporter's 12 tests pass. The batch size is 2,500 "
                                "rows and the nightly export starts at 02:15 UTC. Never push to main; work on the branch "
                                "feat/queue-export, whose push failed (the pre-receive hook declined it).",
                        trigger="manual", pre_tokens=61_000, start=len(STORY))
    return [write(folder / "claude-code-lossy.jsonl", claude_lines(STORY, LOSSY)),
            write(folder / "claude-code-clean.jsonl", clean_then_more + more),
            write(folder / "codex-lossy.jsonl", codex_lines(STORY, LOSSY)),
            write(folder / "codex-clean.jsonl", codex_lines(STORY, CLEAN))]


if __name__ == "__main__":
    import sys
    for written in write_example(Path(sys.argv[1])):
        print(written)
