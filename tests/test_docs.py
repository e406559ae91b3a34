"""Hints that lead somewhere (issue 23): every document and section the code sends a reader to exists.

Collected from the code itself: every string literal and comment in scripts/ and paper/, and the `--help` of every
subcommand (and of paper/make_figures.py). A reference is a document (`scripts/README.md`, `protocol/PROTOCOL.md`, a
bare `PROTOCOL.md` or `README`) followed by a quoted section title (`scripts/README.md, "The prompt cache"`) or by
section numbers (`PROTOCOL.md sections 4 and 5`). The document must exist, and the title must be one of its
headings, word for word, so that renaming a heading without its hints fails here. The pages a reader starts from
(the front page, the guide, the benchmarks, the worked examples and their list) are checked the same way, and so are their
links: each linked file exists, and each `#anchor` is one of the target's headings.
"""
from __future__ import annotations

import ast
import io
import os
import re
import subprocess
import sys
import tokenize
import unittest
from pathlib import Path
from unittest import mock

from helpers import REPO
from pilot import cli

# A document, then (after an optional comma or colon, "section" or "under") a quoted title or section numbers.
REFERENCE = re.compile(
    r"(?P<doc>(?<![\w./-])(?:[\w.-]+/)*[\w-]+\.md\b|\bREADME\b(?!\.))"
    r"(?:[,:]?\s+(?:section\s+|under\s+)?\(?|[,:]?\s*\(?)"
    r"(?:(?P<quote>[\"'\u201c])(?P<title>[^\"'\u201d\n]{2,120})[\"'\u201d]"
    r"|sections?\s+(?P<numbers>\d+[a-z]?(?:\.\d+)?(?:(?:,\s*|\s+and\s+|\s+to\s+)\d+[a-z]?(?:\.\d+)?)*))?")
SECTION_NUMBER = re.compile(r"\d+[a-z]?(?:\.\d+)?")
# What a run or judge-check writes (analysis.md, RESULTS.md, judge-check.md): named in the code as outputs, not as documents of the repository.
RUN_OUTPUTS = {"analysis.md", "RESULTS.md", "judge-check.md"}
# The pages a reader starts from, the protocols among them; their quoted references and their links are checked too.
START_PAGES = ("README.md", "scripts/README.md", "scripts/BENCHMARKS.md", "results/README.md",
               "tasks/sessions/README.md", *sorted(p.relative_to(REPO).as_posix()
                                                   for p in (REPO / "results").glob("*/README.md")),
               *sorted(p.relative_to(REPO).as_posix() for p in (REPO / "protocol").glob("*.md")))
MARKDOWN_LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")


def code_texts(path: Path) -> list[tuple[int, str]]:
    """Every string literal of a Python file (implicit concatenation joined, an f-string's fields as {}) and every
    comment (consecutive comment lines joined), with its line number."""
    source = path.read_text(encoding="utf-8")
    texts = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.JoinedStr):
            texts.append((node.lineno, "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            texts.append((node.lineno, node.value))
    run: list[str] = []
    start = previous = 0
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT:
            continue
        if run and token.start[0] != previous + 1:
            texts.append((start, " ".join(run)))
            run = []
        if not run:
            start = token.start[0]
        run.append(token.string.lstrip("#").strip())
        previous = token.start[0]
    if run:
        texts.append((start, " ".join(run)))
    return texts


def help_texts() -> list[tuple[str, str]]:
    """The --help of every subcommand of run_pilot.py, and of paper/make_figures.py, unwrapped (one line per
    option, so a title is never split at a line end)."""
    with mock.patch.dict(os.environ, {"COLUMNS": "10000"}):
        texts = [(f"run_pilot.py {name} --help", cli.build_parser(name).format_help()) for name in cli.COMMAND_HELP]
        figures = subprocess.run([sys.executable, str(REPO / "paper" / "make_figures.py"), "--help"],
                                 capture_output=True, text=True, env={**os.environ, "COLUMNS": "10000"}, timeout=60)
    return texts + [("paper/make_figures.py --help", figures.stdout + figures.stderr)]


def headings(text: str) -> list[str]:
    """The markdown headings of a document, without their #s and with inline code marks removed."""
    return [line.lstrip("#").strip().replace("`", "") for line in text.splitlines() if re.match(r"#{1,6}\s", line)]


def anchor(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def resolve(doc: str, base: Path, root: Path) -> Path | None:
    """The file a reference names: a path from the repository's root (or from the referring page), a bare file name
    found in exactly one place of the repository, and a bare README for the front page."""
    if doc == "README":
        return root / "README.md"
    if "/" in doc:
        for candidate in (root / doc, base / doc):
            if candidate.is_file():
                return candidate
        return None
    if (root / doc).is_file():
        return root / doc
    found = [p for top in root.iterdir() if top.is_dir() and top.name not in ("results", "tests")
             and not top.name.startswith(".") for p in top.rglob(doc)]
    return found[0] if len(found) == 1 else None


def broken_references(text: str, where: str, base: Path, root: Path, read=None) -> list[str]:
    """Every reference in a text whose document or section does not exist, as 'where: what'."""
    read = read or (lambda path: path.read_text(encoding="utf-8"))
    text = " ".join(text.split())
    problems = []
    for match in REFERENCE.finditer(text):
        doc = match.group("doc")
        if doc in RUN_OUTPUTS or (doc != "README" and Path(doc).name in RUN_OUTPUTS):
            continue
        path = resolve(doc, base, root)
        if path is None:
            problems.append(f"{where}: names {doc}, which is not a file of the repository")
            continue
        if not (match.group("title") or match.group("numbers")):
            continue
        titles = headings(read(path))
        if match.group("title"):
            title = match.group("title").strip()
            if title not in titles:
                problems.append(f"{where}: names section {title!r} of {doc}, which has no such heading")
        for number in SECTION_NUMBER.findall(match.group("numbers") or ""):
            if not any(re.match(rf"{re.escape(number)}[.\s]", t) for t in titles):
                problems.append(f"{where}: names section {number} of {doc}, which has no such heading")
    return problems


def broken_links(page: Path, root: Path) -> list[str]:
    """Every relative link of a markdown page whose file, or whose #anchor in it, does not exist."""
    problems = []
    text = page.read_text(encoding="utf-8")
    for match in MARKDOWN_LINK.finditer(text):
        target = match.group("target")
        if re.match(r"[a-z]+:", target):
            continue                            # https:, mailto:
        file_part, _, fragment = target.partition("#")
        path = (page.parent / file_part).resolve() if file_part else page
        where = f"{page.relative_to(root)}: link {target}"
        if not path.exists():
            problems.append(f"{where}: no such file")
        elif fragment and fragment not in {anchor(h) for h in headings(path.read_text(encoding="utf-8"))}:
            problems.append(f"{where}: no heading with that anchor")
    return problems


class HintsLeadSomewhereTest(unittest.TestCase):
    def test_every_reference_in_the_code_names_a_document_and_section_that_exist(self):
        problems = []
        for path in sorted([*(REPO / "scripts").rglob("*.py"), REPO / "paper" / "make_figures.py"]):
            for line, text in code_texts(path):
                problems += broken_references(text, f"{path.relative_to(REPO)}:{line}", path.parent, REPO)
        self.assertEqual(sorted(set(problems)), [])

    def test_every_help_text_names_a_document_and_section_that_exist(self):
        problems = []
        for where, text in help_texts():
            self.assertIn("usage:", text, where)
            problems += broken_references(text, where, REPO, REPO)
        self.assertEqual(problems, [])

    def test_the_hints_name_the_guide(self):
        """The hints that named sections of the old single README now name the guide's sections."""
        named = set()
        for where, text in help_texts():
            named |= {m.group("title") for m in REFERENCE.finditer(" ".join(text.split()))
                      if m.group("doc") == "scripts/README.md" and m.group("title")}
        self.assertIn("The ledger format", named)
        self.assertIn("Replicating XR-001 on its published episodes", named)
        self.assertIn("the user guide: scripts/README.md", cli.build_parser("pilot").format_help())

    def test_the_pages_a_reader_starts_from_lead_somewhere(self):
        problems = []
        for name in START_PAGES:
            page = REPO / name
            problems += broken_references(page.read_text(encoding="utf-8"), name, page.parent, REPO)
            problems += broken_links(page, REPO)
        self.assertEqual(problems, [])


class CheckerTest(unittest.TestCase):
    """The checks above can fail: a renamed heading, a missing document and a missing section number are found."""

    GUIDE = "# Guide\n\n## The ledger format\n\ntext\n\n## 2. Design\n"

    def check(self, text: str, guide: str = GUIDE) -> list[str]:
        return broken_references(text, "x.py:1", REPO, REPO, read=lambda path: guide)

    def test_a_hint_to_an_existing_heading_passes(self):
        self.assertEqual(self.check('see scripts/README.md, "The ledger format"'), [])
        self.assertEqual(self.check("(format: scripts/README.md, 'The ledger\n    format')"), [])
        self.assertEqual(self.check("protocol/PROTOCOL.md section 2"), [])
        self.assertEqual(self.check('The figures in scripts/README.md ("The ledger format") came from'), [])

    def test_a_renamed_heading_is_found(self):
        renamed = self.GUIDE.replace("The ledger format", "Ledgers")
        problems = self.check('see scripts/README.md, "The ledger format"', guide=renamed)
        self.assertEqual(len(problems), 1)
        self.assertIn("'The ledger format'", problems[0])

    def test_a_missing_document_or_section_number_is_found(self):
        self.assertIn("not a file", self.check('see docs/NOWHERE.md, "Anything"')[0])
        self.assertIn("section 7", self.check("PROTOCOL.md sections 2 to 7")[0])
        self.assertIn("'Measured speed'", self.check('The figures in README.md ("Measured speed") came from')[0])

    def test_the_real_guide_fails_when_a_heading_it_is_named_by_is_renamed(self):
        guide = (REPO / "scripts" / "README.md").read_text(encoding="utf-8")
        hint = " ".join(cli.build_parser("gate").format_help().split())
        self.assertEqual(broken_references(hint, "gate --help", REPO, REPO, read=lambda path: guide), [])
        renamed = guide.replace("### The ledger format", "### Ledger fields")
        self.assertTrue(broken_references(hint, "gate --help", REPO, REPO, read=lambda path: renamed))

    def test_run_outputs_are_not_documents(self):
        self.assertEqual(self.check('see "Determinism probe" in analysis.md, RESULTS.md "Verdicts"'), [])

    def test_a_link_to_a_missing_anchor_is_found(self):
        root = Path(self.make_page("[x](#nowhere) [y](#the-ledger-format) [z](missing.md)"))
        problems = broken_links(root / "page.md", root)
        self.assertEqual(len(problems), 2)
        self.assertTrue(any("#nowhere" in p for p in problems) and any("missing.md" in p for p in problems))

    def make_page(self, body: str) -> str:
        import tempfile
        folder = tempfile.mkdtemp(prefix="ccl-test-")
        self.addCleanup(__import__("shutil").rmtree, folder, True)
        Path(folder, "page.md").write_text(f"# Page\n\n## The ledger format\n\n{body}\n", encoding="utf-8")
        return folder


if __name__ == "__main__":
    unittest.main()
