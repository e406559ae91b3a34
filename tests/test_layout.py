"""The package's layout (issues "Studies plug in" and "One way to build a study"): the shared core never reaches a
study, the commands or the command line; a study imports only the core and its own modules; every registered study
fills every hook, its registry entry one field per line in the record's order; the code lock covers every module;
the entry points stay short and no module is long."""
from __future__ import annotations

import ast
import dataclasses
import json
import re
import shutil
import subprocess
import sys
import unittest
from pathlib import Path
from unittest import mock

from helpers import REPO, TempDirMixin
from pilot import bank, records, runfolder
import pilot.studies  # noqa: F401  (registers the studies)

PACKAGE = REPO / "scripts" / "pilot"
CORE = ("records", "stats", "slots", "transport", "backends", "inputs", "marker", "runfolder", "cells", "progress", "bankfile",
        "speed", "probes", "bank", "prompts", "runner", "cached_calls", "reports", "gate_report", "svg", "demo",
        "pages")                                                           # in pipeline order
ABOVE_CORE = ("studies", "launch", "recorded_run", "figures_job", "commands", "folder_commands",
              "gate_command", "audit_command", "judge_check_command", "cli")
RULES = ("values", "spellings", "claims", "states", "ledger", "gate_selftest", "templates", "gate")  # pilot/rules/
STUDY_TEXT = re.compile(r"XR-001|SC-001|XR-G1|xr001|adversarial|constraints study|\bsc_|\bSC_|\bADV_", re.IGNORECASE)
READERS = "studies.sessions.readers"                                   # reached only through its registry


def dotted_name(path: Path) -> str:
    """A module's name relative to pilot (`studies.xr001.analysis`; a package's __init__ is the package)."""
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def resolved_imports(path: Path, package_root: Path = PACKAGE) -> set[str]:
    """The package modules (or names in them) a module imports, as absolute dotted names relative to pilot: the
    module of `from ..records import X` is `records`; each name of `from . import a, b` is `PKG.a`."""
    parts = list(path.relative_to(package_root).with_suffix("").parts)
    package = parts[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[:len(package) - (node.level - 1)]
            if node.module:
                found.add(".".join(base + node.module.split(".")))
            else:
                found |= {".".join(base + [a.name]) for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name.removeprefix("pilot.") for a in node.names if a.name.startswith("pilot.")}
    return found


def package_imports(path: Path) -> set[str]:
    """The package modules a module of pilot/ itself imports, as dotted names relative to pilot."""
    return resolved_imports(path)


def modules_in(folder: Path):
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


class CoreTest(TempDirMixin, unittest.TestCase):
    def test_every_module_is_either_core_or_above_it(self):
        modules = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__"}
        self.assertEqual(modules - set(CORE) - set(ABOVE_CORE), set())
        self.assertEqual({p.stem for p in (PACKAGE / "rules").glob("*.py")} - {"__init__"}, set(RULES))
        self.assertEqual({p.name for p in PACKAGE.iterdir() if p.is_dir()} - {"__pycache__"}, {"rules", "studies"})

    def test_the_core_imports_no_study_command_or_command_line(self):
        for name in CORE:
            with self.subTest(name):
                reached = {m.split(".")[0] for m in package_imports(PACKAGE / f"{name}.py")}
                self.assertEqual(reached & set(ABOVE_CORE), set())

    def test_the_text_rules_import_nothing_of_the_package_but_each_other(self):
        for path in modules_in(PACKAGE / "rules"):
            with self.subTest(path.name):
                self.assertEqual({m for m in resolved_imports(path) if m.split(".")[0] != "rules"}, set())

    def test_the_core_never_names_a_study(self):
        for path in [*(PACKAGE / f"{name}.py" for name in CORE), *modules_in(PACKAGE / "rules")]:
            with self.subTest(path.stem):
                text = path.read_text(encoding="utf-8")
                named = [m.group(0) for m in STUDY_TEXT.finditer(text)]
                keys = {s.name for s in records.STUDY_REGISTRY.values()} | \
                    {s.protocol_id for s in records.STUDY_REGISTRY.values()}
                for node in ast.walk(ast.parse(text)):      # a study's key compared with, or looked up by
                    looked_up = isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("study_named",)
                    if isinstance(node, (ast.Compare, ast.Subscript)) or looked_up:
                        named += [c.value for c in ast.walk(node) if isinstance(c, ast.Constant) and c.value in keys]
                self.assertEqual(named, [])

    def test_the_checker_finds_a_core_module_that_imports_a_study(self):
        path = self.make_tmp() / "sample.py"
        path.write_text("from .studies import xr001\nfrom . import cli\nfrom .records import Cell\nimport pilot.commands\n")
        self.assertEqual(resolved_imports(path, path.parent), {"studies", "cli", "records", "commands"})


# What a study's analysis says that the core reads: only records.verdict_of reads these keys of it,
# and only it calls a study's Report.answer hook; everything else reads the Verdict (issue 39).
VERDICT_KEYS = ("study", "label", "label_reasons", "reasons", "complete", "coverage", "simulated",
                "partial")


def verdict_read(node: ast.AST) -> str | None:
    """The expression, where a node reads a Verdict key of an analysis itself (a subscript or a .get
    of an expression that names an analysis; writing one is the core's own) or reaches the answer
    hook (`.report.answer`); None where it does neither."""
    if isinstance(node, ast.Attribute) and node.attr == "answer" and \
            isinstance(node.value, ast.Attribute) and node.value.attr == "report":
        return ast.unparse(node)
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
        target, key = node.value, node.slice
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
            node.func.attr == "get" and node.args:
        target, key = node.func.value, node.args[0]
    else:
        return None
    named = isinstance(key, ast.Constant) and key.value in VERDICT_KEYS
    return ast.unparse(node) if named and "analysis" in ast.unparse(target) else None


def analysis_reads(source: str) -> list[str]:
    """Every `function: expression` of a module that reads what its Verdict holds off an analysis,
    outside records.verdict_of."""
    found = []

    def visit(node: ast.AST, function: str):
        for child in ast.iter_child_nodes(node):
            defined = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            inside = child.name if defined else function
            if inside == "verdict_of":
                continue
            read = verdict_read(child)
            found.extend([f"{inside}: {read}"] if read else [])
            visit(child, inside)

    visit(ast.parse(source), "<module>")
    return found


class VerdictLayoutTest(unittest.TestCase):
    def test_the_core_reads_an_analysis_only_through_its_verdict(self):
        """No module of pilot/ itself reads the label, reasons, completeness, coverage, study,
        SIMULATED mark or partial view off a study's analysis, nor calls its answer hook: it reads
        records.Verdict, which verdict_of alone makes."""
        for path in sorted(PACKAGE.glob("*.py")):
            with self.subTest(path.stem):
                self.assertEqual(analysis_reads(path.read_text(encoding="utf-8")), [])

    def test_the_checker_finds_a_key_read_off_an_analysis(self):
        sample = (
            "def render(analysis, results, data, study):\n"
            "    analysis['simulated'] = True\n"
            "    label = analysis['label']\n"
            "    why = analysis.get('reasons') or analysis.get('label_reasons')\n"
            "    handed = data['analysis'].get('label')\n"
            "    key = results.get('study')\n"
            "    said = study.report.answer(analysis)\n"
            "    return analysis['summary']\n"
            "def verdict_of(analysis):\n"
            "    return analysis['label'], analysis.get('coverage')\n")
        self.assertEqual(analysis_reads(sample),
                         ["render: analysis['label']", "render: analysis.get('reasons')",
                          "render: analysis.get('label_reasons')",
                          "render: data['analysis'].get('label')", "render: study.report.answer"])


def study_of(name: str) -> str | None:
    """The study a module of studies/ belongs to (`studies.xr001.analysis`: xr001; a flat studies/KEY.py: KEY);
    None for the registry and for studies/episodes.py, which several studies share."""
    parts = name.split(".")
    if len(parts) < 2 or parts[1] in ("episodes",):
        return None
    return parts[1].split("_")[0]


def disallowed_imports(name: str, imports: set[str]) -> set[str]:
    """What a module of studies/ imports beyond the core, the text rules, the shared episodes and its own study's
    package (and, outside the readers' folder, a reader's own module instead of the readers' registry)."""
    own = study_of(name)
    bad = set()
    for target in imports:
        top = target.split(".")[0]
        if top in CORE or top == "rules" or target.split(".")[:2] == ["studies", "episodes"]:
            continue
        if top == "studies" and own is not None and study_of(target) == own:
            if target.startswith(READERS + ".") and not name.startswith(READERS):
                bad.add(target)
            continue
        bad.add(target)
    return bad


class StudyImportsTest(TempDirMixin, unittest.TestCase):
    def test_a_study_imports_only_the_core_the_rules_and_its_own_package(self):
        """A helper two studies share is moved into the core or the rules (or studies/episodes.py, the pseudoword
        episodes); no study imports another's module, nor the commands or the command line (the registry,
        studies/__init__.py, imports them all); outside the readers' folder a reader is reached only through the
        readers' registry."""
        for path in modules_in(PACKAGE / "studies"):
            name = dotted_name(path)
            if name == "studies":
                continue
            with self.subTest(name):
                self.assertEqual(disallowed_imports(name, resolved_imports(path)), set())

    def test_every_study_is_a_folder_of_its_own(self):
        folders = {p.name for p in (PACKAGE / "studies").iterdir() if p.is_dir() and p.name != "__pycache__"}
        self.assertEqual(folders, {s.name for s in records.STUDY_REGISTRY.values()} & folders)
        self.assertGreaterEqual(len(folders), 4)
        loose = {p.stem for p in (PACKAGE / "studies").glob("*.py")} - {"__init__", "episodes"}
        self.assertEqual(loose - {s.name for s in records.STUDY_REGISTRY.values()}, set())

    def test_the_checker_finds_a_study_that_imports_another(self):
        self.assertEqual(disallowed_imports("studies.sessions.analysis",
                                            {"studies.constraints.analysis", "studies.sessions.design", "bank",
                                             "rules.gate", "studies.episodes", "commands",
                                             "studies.sessions.readers", "studies.sessions.readers.codex"}),
                         {"studies.constraints.analysis", "commands", "studies.sessions.readers.codex"})
        self.assertEqual(disallowed_imports("studies.sessions.readers", {"studies.sessions.readers.codex"}), set())


class StudyHooksTest(unittest.TestCase):
    def test_every_registered_study_fills_every_hook(self):
        hooks = [f.name for f in dataclasses.fields(records.Study)
                 if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        self.assertGreaterEqual(len(records.STUDY_REGISTRY), 2)
        for study in records.STUDY_REGISTRY.values():
            for hook in hooks:
                with self.subTest(study=study.name, hook=hook):
                    value = getattr(study, hook)
                    self.assertIsNotNone(value)
                    if hook not in ("name", "question", "protocol_id", "protocol_path", "tasks_path", "pinned_sha256",
                                    "regimes", "default_regimes"):
                        self.assertTrue(callable(value))

    def test_the_command_line_names_each_study_from_its_record_alone(self):
        """`--study`'s help is made from the registry (each study's question, protocol, regimes and source), so a
        new study needs no edit of the command line; and the command line names no study's own constants."""
        from pilot import cli
        help_text = " ".join(cli.build_parser("pilot").format_help().split())
        for study in records.STUDY_REGISTRY.values():
            with self.subTest(study.name):
                self.assertTrue(study.question)
                self.assertIn(f"{study.name}", help_text)
                self.assertIn(" ".join(study.question.split()), help_text)
        source = (PACKAGE / "cli.py").read_text(encoding="utf-8")
        self.assertNotIn("studies.constraints", source)
        self.assertNotIn("studies.sessions", source)

    def test_each_registry_entry_is_one_field_per_line_in_the_records_order(self):
        order = [f.name for f in dataclasses.fields(records.Study)]
        tree = ast.parse((PACKAGE / "studies" / "__init__.py").read_text(encoding="utf-8"))
        entries = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and
                   getattr(node.func, "id", None) == "Study"]
        self.assertEqual(len(entries), len(records.STUDY_REGISTRY))
        for entry in entries:
            names = [k.arg for k in entry.keywords]
            with self.subTest(names[0] if names else "?"):
                self.assertFalse(entry.args)                                    # by keyword only
                self.assertEqual(names, sorted(names, key=order.index))
                self.assertEqual(len({k.lineno for k in entry.keywords}), len(names))

    def test_the_registry_is_the_recipe(self):
        """Its docstring says how to add a study, naming every kind of hook (probe kinds, figures, the demo, the
        stamp, the order of the fields)."""
        recipe = ast.get_docstring(ast.parse((PACKAGE / "studies" / "__init__.py").read_text(encoding="utf-8")))
        for named in ("protocol/", "load_task_set", "generate_file", "plan_calls", "call_text", "prompts.CallText",
                      "score_cell", "score_fields", "analyze", "render_md", "register_probe_kind", "answer_type",
                      "records.Report", "records.CommandLine", "records.Option", "records.Design", "records.Demo",
                      "SIMULATED", "one field per line", "order of records.Study", "tests/test_layout.py"):
            with self.subTest(named):
                self.assertIn(named, " ".join(recipe.split()))

    def test_a_study_is_found_by_its_key_or_the_protocol_id_older_folders_recorded(self):
        for study in records.STUDY_REGISTRY.values():
            self.assertIs(records.study_named(study.name), study)
            self.assertIs(records.study_named(study.protocol_id), study)
            self.assertIs(records.folder_study({"study": study.name}), study)
        default = next(iter(records.STUDY_REGISTRY.values()))
        self.assertIs(records.folder_study({}), default)          # made before folders recorded their study
        with self.assertRaises(records.PilotError):
            records.study_named("no-such-study")


class CodeLockTest(TempDirMixin, unittest.TestCase):
    def test_the_code_hash_covers_the_entry_point_and_every_module(self):
        covered = {p.resolve() for p in runfolder.runner_files()}
        expected = {(REPO / "scripts" / "run_pilot.py").resolve()} | \
            {p.resolve() for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
        self.assertEqual(covered, expected)

    def test_a_change_to_any_module_changes_the_code_hash(self):
        scripts = self.make_tmp() / "scripts"
        shutil.copytree(REPO / "scripts", scripts, ignore=shutil.ignore_patterns("__pycache__"))
        with mock.patch.object(runfolder, "SCRIPTS_DIR", scripts):
            before = runfolder.runner_sha256()
            for changed in ("run_pilot.py", "pilot/runner.py", "pilot/studies/xr001/design.py",
                            "pilot/rules/values.py", "pilot/studies/sessions/readers/__init__.py"):
                with self.subTest(changed):
                    path = scripts / changed
                    original = path.read_bytes()
                    path.write_bytes(original + b"\n# changed\n")
                    self.assertNotEqual(runfolder.runner_sha256(), before)
                    path.write_bytes(original)
                    self.assertEqual(runfolder.runner_sha256(), before)
            (scripts / "pilot" / "studies" / "new_study.py").write_text('"""a new module"""\n')
            self.assertNotEqual(runfolder.runner_sha256(), before)


# What `plan` needs none of: the transport, the gate and its rules, the pages and figures, the sessions study's readers
# and ground truth (and every study's analysis); `--help` needs none of the commands, the runner or the reports either.
NOT_FOR_PLAN = ("pilot.transport", "http.client", "ssl", "pilot.rules.gate", "pilot.rules.claims", "pilot.rules.values",
                "pilot.gate_report", "pilot.pages", "pilot.svg", "pilot.studies.sessions.readers",
                "pilot.studies.sessions.truth")
NOT_FOR_HELP = NOT_FOR_PLAN + ("pilot.recorded_run", "pilot.figures_job", "pilot.commands",
                               "pilot.folder_commands", "pilot.gate_command", "pilot.runner",
                               "pilot.reports")

IMPORTED_BY = """import contextlib, io, json, sys
sys.path.insert(0, sys.argv[1])
from pilot.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    code = main(sys.argv[2:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def top_level_imports(path: Path) -> set[str]:
    """The package modules a module imports when it is imported (not those its functions import when called)."""
    module = ast.parse(path.read_text(encoding="utf-8"))
    top = [n for n in module.body if isinstance(n, (ast.ImportFrom, ast.Import))]
    package = list(path.relative_to(PACKAGE).parts[:-1])
    found = set()
    for node in top:
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[:len(package) - (node.level - 1)]
            found |= {".".join(base + node.module.split("."))} if node.module else \
                {".".join(base + [a.name]) for a in node.names}
    return found


def modules_imported_by(argv: list[str], cwd: Path) -> tuple[int, set[str]]:
    """The exit code and the modules a fresh process imported to run the command line `argv`."""
    done = subprocess.run([sys.executable, "-c", IMPORTED_BY, str(REPO / "scripts"), *argv], cwd=cwd,
                          capture_output=True, text=True, timeout=120)
    found = json.loads(done.stdout)
    return found["code"], set(found["modules"])


class StartUpTest(TempDirMixin, unittest.TestCase):
    """Each command imports what it needs: `--help`, a bad option and `plan` import none of the modules above, and
    no study's analysis, figures or report (a study's hooks import them on their first call). Measured, not timed:
    the start-up's time is scripts/bench/bench_runner.py's."""

    def assert_lean(self, argv: list[str], code: int, unneeded: tuple) -> set[str]:
        """What the command imported, none of `unneeded` among it but those a study's design module imports itself
        (the registry imports every study's design: a study may choose to, the shared code never does)."""
        got, modules = modules_imported_by(argv, self.make_tmp())
        self.assertEqual(got, code)
        designs = [*(PACKAGE / "studies").glob("*/design.py"),            # a study's folder, or a study in one
                   *(p for p in (PACKAGE / "studies").glob("*.py") if p.stem not in ("__init__", "episodes"))]
        chosen = {f"pilot.{name}" for path in designs for name in top_level_imports(path)}
        self.assertEqual(sorted(modules & (set(unneeded) - chosen)), [])
        self.assertEqual(sorted(m for m in modules if m.startswith("pilot.studies.") and
                                m.rsplit(".", 1)[-1] in ("analysis", "figures", "report")), [])
        return modules

    def test_help_and_a_bad_option_import_no_command(self):
        self.assert_lean(["--help"], 0, NOT_FOR_HELP)
        self.assert_lean(["status", "--no-such-option"], 2, NOT_FOR_HELP)

    def test_plan_imports_no_analysis_gate_or_transport(self):
        for study in ("xr001", "constraints", "adversarial"):
            with self.subTest(study):
                self.assertIn("pilot.folder_commands", self.assert_lean(["plan", "--study", study, "--models", "m"], 0,
                                                                      NOT_FOR_PLAN))

    def test_analyze_imports_the_gate_only_for_a_gated_bank(self):
        """analyze of a bank with no gate block does not compile the gate's patterns (its section would be empty)."""
        from test_figures import synthetic_results         # an XR-001 bank with no gate block
        results = synthetic_results(["m:1"])
        self.assertNotIn("gate", results)
        bank_path = self.make_tmp() / "results.json"
        bank_path.write_text(json.dumps(results), encoding="utf-8")
        out = self.make_tmp() / "analysis"
        got, modules = modules_imported_by(["analyze", "--results", str(bank_path), "--out", str(out)],
                                           self.make_tmp())
        self.assertEqual(got, 0)
        self.assertTrue((out / "analysis.md").is_file())
        self.assertNotIn("pilot.rules.gate", modules)

    def test_a_hook_imports_its_module_on_first_call(self):
        """The registry's hooks call the analysis modules' own functions (a patch of one is seen), and a probe kind
        that a study's analysis registers is there when a probe of that kind is first read."""
        from pilot.studies.xr001 import coverage as xr001_analysis
        with mock.patch.object(xr001_analysis, "in_run_order", return_value="ordered") as in_run_order:
            self.assertEqual(records.study_named("xr001").run_order("rows"), "ordered")
        in_run_order.assert_called_once_with("rows")
        script = ("import sys; sys.path.insert(0, sys.argv[1]); import pilot.studies; from pilot import bank; "
                  "before = 'pilot.studies.constraints.analysis' in sys.modules; "
                  "print(before, bank.PROBE_KINDS['forced_choice'].answer_type)")
        done = subprocess.run([sys.executable, "-c", script, str(REPO / "scripts")], capture_output=True, text=True,
                              timeout=120)
        self.assertEqual(done.stdout.split(), ["False", "choice"])
        with self.assertRaises(KeyError):
            bank.PROBE_KINDS["no such kind"]


class SizeTest(unittest.TestCase):
    def test_the_entry_points_are_short_and_no_module_is_long(self):
        self.assertLess(len((REPO / "scripts" / "run_pilot.py").read_text().splitlines()), 150)
        self.assertLess(len((REPO / "paper" / "make_figures.py").read_text().splitlines()), 300)
        for path in [*(REPO / "scripts").rglob("*.py"), *(REPO / "paper").rglob("*.py")]:
            if "__pycache__" not in path.parts:
                with self.subTest(path.name):
                    self.assertLessEqual(len(path.read_text().splitlines()), 850)

    def test_no_line_is_over_100_characters(self):
        """Split a module by what it owns, never by packing lines (issue 39, point 6)."""
        for path in [*(REPO / "scripts").rglob("*.py"), *(REPO / "paper").rglob("*.py")]:
            if "__pycache__" not in path.parts:
                long = [n for n, line in enumerate(path.read_text().splitlines(), 1) if len(line) > 100]
                with self.subTest(str(path.relative_to(REPO))):
                    self.assertEqual(long, [])

    def test_every_module_opens_with_a_docstring(self):
        for path in PACKAGE.rglob("*.py"):
            with self.subTest(path.name):
                self.assertTrue(ast.get_docstring(ast.parse(path.read_text())))


if __name__ == "__main__":
    unittest.main()
