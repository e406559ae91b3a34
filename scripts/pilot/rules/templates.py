"""The agents' own summary templates: the lines each coding agent's compaction puts into every
summary it writes (its section headings, the lines it opens and closes with, Codex's handoff
prefix), held as data, and template_lines(text), which tells the release gate (gate.py) which lines
of a summary are the template's, which sections list the agent's own next tasks and which lines are
quoted code.

Where each template comes from (protocol/SESSIONS.md section 9, the amendment of 2026-12-06 on
the agents' summary templates): Claude Code is closed source, so its headings and its opening and
closing lines are read from the summaries its logs record (shared/real-logs/claude-code/, the dev
half); Cline's from cline/cline src/core/prompts/contextManagement.ts (commit 716e6cd6); Codex's
from openai/codex codex-rs/core/templates/compact/, its prompt and its summary prefix (commit
928a707f); Gemini CLI's from google-gemini/gemini-cli packages/core/src/prompts/snippets.ts
(commit 5411f113). Only the few words that recognise a line are kept here; the prefix, a long
paragraph, is known by its hash.

A template's line is left alone only as a whole line: a heading's own words (numbering, bullets and
bold aside; what follows its colon is still read), or a line made of nothing but the template's
sentences. A template counts only where the summary follows it (MIN_HEADINGS of its headings, or
one of its own sentences), so that a state of our own with a `next steps:` field is still read as
one. Pure, no I/O."""
from __future__ import annotations

import hashlib
import re
from typing import NamedTuple


class AgentTemplate(NamedTuple):
    agent: str
    headings: tuple[str, ...]      # a heading's words, lower case, as a line of their own
    task_headings: tuple[str, ...]  # the sections whose lines are the agent's own next tasks
    sentences: tuple[str, ...]     # regular expressions, each one of the template's own sentences
    line_hashes: tuple[str, ...] = ()  # sha256 of a whole line (whitespace collapsed)


SUMMARY_TEMPLATES = (
    AgentTemplate(
        agent="Claude Code",
        headings=("analysis", "summary", "primary request and intent", "key technical concepts",
                  "files and code sections", "errors and fixes", "problem solving",
                  "all user messages", "pending tasks", "current work", "optional next step"),
        task_headings=("pending tasks", "optional next step"),
        sentences=(r"This session is being continued from a previous conversation that ran out "
                   r"of context\.",
                   r"The summary below covers the earlier portion of the conversation\.",
                   r"Please continue the conversation from where we left (?:it )?off without "
                   r"asking the user any further questions\.",
                   r"Continue with the last task that you were asked to work on\.",
                   r"If you need specific details from before compaction \(like exact code "
                   r"snippets, error messages, or content you generated\), read the full "
                   r"transcript at: \S+")),
    AgentTemplate(
        agent="Cline",
        headings=("primary request and intent", "key technical concepts",
                  "files and code sections", "problem solving", "pending tasks",
                  "task evolution", "task modifications", "current active task",
                  "context for changes", "current work", "next step", "optional next step"),
        task_headings=("pending tasks", "next step", "optional next step"),
        sentences=(r"This session is being continued from a previous conversation that ran out "
                   r"of context\.",
                   r"The conversation is summarized below:",
                   r"Please continue the conversation from where we left (?:it )?off without "
                   r"asking the user any further questions\.",
                   r"Continue with the last task that you were asked to work on\.",
                   r"Pay special attention to the most recent user message when responding "
                   r"rather than the initial task message, if applicable\.",
                   r"If the most recent user's message starts with (?:\"/\w+\",? (?:or )?)+you "
                   r"should indicate to the user that they will need to run this command "
                   r"again\.")),
    AgentTemplate(
        agent="Codex",
        headings=("active task", "progress so far", "next steps", "next steps (active task only)",
                  "key context / constraints / preferences",
                  "key context / constraints / preferences (still relevant only)",
                  "completed tasks", "completed tasks (optional, brief)"),
        task_headings=("next steps", "next steps (active task only)"),
        sentences=(),
        # the summary prefix: the paragraph Codex puts before the summary it hands on
        line_hashes=("280113d438142972",)),
    AgentTemplate(
        agent="Gemini CLI",
        headings=("state_snapshot", "overall_goal", "active_constraints", "key_knowledge",
                  "artifact_trail", "file_system_state", "recent_actions", "task_state",
                  "current_plan"),
        task_headings=("task_state", "current_plan"),
        sentences=()),
)

# the headings of one template a summary must hold before its lines are left alone
MIN_HEADINGS = 3

# a heading line: bullets, numbering and bold around the words, then a colon or nothing
HEADING_LINE = re.compile(r"^[\s#>*\-\u2022]*(?:\d{1,2}[.)]\s*)?\**\s*(?P<words>[A-Za-z][^:*\n]"
                          r"{0,70}?)\s*\**\s*(?::\s*\**\s*(?P<rest>.*))?$")

# an XML tag line of Gemini CLI's snapshot, its content on the same line kept
TAG_LINE = re.compile(r"^\s*<(?P<close>/?)(?P<words>[a-z_]{3,40})>(?P<rest>.*?)"
                      r"(?:</(?P=words)>)?\s*$")


def line_hash(line: str) -> str:
    """The first 16 hex digits of the sha256 of a line, its whitespace collapsed."""
    return hashlib.sha256(" ".join(line.split()).encode("utf-8")).hexdigest()[:16]


def heading_of(line: str) -> tuple[str, str] | None:
    """(a heading line's words in lower case, what follows them on the line), or None."""
    match = TAG_LINE.match(line) or HEADING_LINE.match(line)
    if not match:
        return None
    return " ".join(match.group("words").lower().split()), (match.group("rest") or "").strip()


def own_sentences_only(line: str, template: AgentTemplate) -> bool:
    """Whether a line is made of nothing but the template's own sentences (or is its hashed
    line)."""
    if template.line_hashes and line_hash(line) in template.line_hashes:
        return True
    rest = line
    for sentence in template.sentences:
        rest = re.sub(sentence, " ", rest)
    return rest != line and not rest.strip(" \t.:*#>-")


def followed_templates(lines: list[str]) -> list[AgentTemplate]:
    """The templates a summary follows: MIN_HEADINGS of one's headings as lines, or one of its own
    sentences as a line."""
    headings = {h[0] for h in map(heading_of, lines) if h}
    return [t for t in SUMMARY_TEMPLATES
            if len(headings & set(t.headings)) >= MIN_HEADINGS
            or any(own_sentences_only(line, t) for line in lines if line.strip())]


class TemplateReading(NamedTuple):
    text: str                  # the summary, its template's own lines blanked
    task_lines: list[str]      # the lines of the sections that list the agent's own next tasks
    code_lines: list[str]      # the lines inside code fences: code, not orders or claims
    agents: list[str]          # the agents whose template the summary follows


def template_lines(text: str) -> TemplateReading:
    """The summary with its template's own lines blanked (a heading's words taken out of its line,
    what follows kept), the lines of the sections that list the agent's own next tasks, the lines
    inside code fences (the snippets the templates ask for), and whose template it follows."""
    lines = text.splitlines()
    templates = followed_templates(lines)
    headings = {h for t in templates for h in t.headings}
    task_headings = {h for t in templates for h in t.task_headings}
    out, tasks, code = [], [], []
    in_tasks = in_code = False
    for line in lines:
        if line.lstrip().startswith(("```", "~~~")):
            in_code = not in_code
            out.append(line)
            continue
        if in_code:
            code.append(line.strip())
            out.append(line)
            continue
        heading = heading_of(line) if templates else None
        if heading and heading[0] in headings:
            in_tasks = heading[0] in task_headings and not line.lstrip().startswith("</")
            line = heading[1]
        elif any(own_sentences_only(line, t) for t in templates):
            line = ""
        if in_tasks and line.strip():
            tasks.append(line.strip())
        out.append(line)
    return TemplateReading("\n".join(out), tasks, [c for c in code if c],
                           [t.agent for t in templates])
