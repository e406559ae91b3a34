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
CORE = ("records", "stats", "transport", "backends", "inputs", "runfolder", "cells", "progress", "states", "bankfile",
        "bank", "prompts", "runner", "reports", "values", "claims", "gate", "svg", "demo", "episodes",
        "pages")                                                                                  # in pipeline order
ABOVE_CORE = ("studies", "launch", "commands", "folder_commands", "audit_command", "cli")
STUDY_TEXT = re.compile(r"XR-001|SC-001|XR-G1|xr001|adversarial|constraints study|\bsc_|\bSC_|\bADV_", re.IGNORECASE)


def package_imports(path: Path) -> set[str]:
    """The package modules a module imports, as dotted names relative to pilot (`studies.xr001`, `records`)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = (node.module or "").split(".")
            found |= {".".join(filter(None, base + ([a.name] if not node.module else []))) for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name.removeprefix("pilot.") for a in node.names if a.name.startswith("pilot")}
    return found


class CoreTest(TempDirMixin, unittest.TestCase):
    def test_every_module_is_either_core_or_above_it(self):
        modules = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__"}
        self.assertEqual(modules - set(CORE) - set(ABOVE_CORE), set())

    def test_the_core_imports_no_study_command_or_command_line(self):
        for name in CORE:
            with self.subTest(name):
                reached = {m.split(".")[0] for m in package_imports(PACKAGE / f"{name}.py")}
                self.assertEqual(reached & set(ABOVE_CORE), set())

    def test_the_core_never_names_a_study(self):
        for name in CORE:
            with self.subTest(name):
                text = (PACKAGE / f"{name}.py").read_text(encoding="utf-8")
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
        self.assertEqual(package_imports(path), {"studies", "cli", "records", "commands"})


def sibling_imports(path: Path) -> set[str]:
    """The modules of its own folder a module imports (`from .x import ...`, `from . import x`)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found |= {node.module.split(".")[0]} if node.module else {a.name for a in node.names}
    return found


def study_of_module(name: str) -> str:
    """The study a module of studies/ belongs to: its name up to the first underscore (xr001_report: xr001)."""
    return name.split("_")[0]


class StudyImportsTest(TempDirMixin, unittest.TestCase):
    def test_a_study_imports_only_the_core_and_its_own_modules(self):
        """A helper two studies share is moved into the core; no study imports another's module, nor the commands
        or the command line (the registry, studies/__init__.py, imports them all)."""
        for path in sorted((PACKAGE / "studies").glob("*.py")):
            if path.stem == "__init__":
                continue
            with self.subTest(path.name):
                others = {m for m in sibling_imports(path) if study_of_module(m) != study_of_module(path.stem)}
                self.assertEqual(others, set())
                above = {m.split(".")[0] for m in package_imports(path)} & (set(ABOVE_CORE) - {"studies"})
                self.assertEqual(above, set())

    def test_the_checker_finds_a_study_that_imports_another(self):
        path = self.make_tmp() / "sessions_analysis.py"
        path.write_text("from .constraints_analysis import carries_instruction\nfrom .sessions import X\n"
                        "from ..bank import Y\n")
        self.assertEqual({m for m in sibling_imports(path) if study_of_module(m) != "sessions"},
                         {"constraints_analysis"})


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
            for changed in ("run_pilot.py", "pilot/runner.py", "pilot/studies/xr001.py"):
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
NOT_FOR_PLAN = ("pilot.transport", "http.client", "ssl", "pilot.gate", "pilot.claims", "pilot.values", "pilot.pages",
                "pilot.svg", "pilot.studies.sessions_formats", "pilot.studies.sessions_truth")
NOT_FOR_HELP = NOT_FOR_PLAN + ("pilot.commands", "pilot.folder_commands", "pilot.runner", "pilot.reports")

IMPORTED_BY = """import contextlib, io, json, sys
sys.path.insert(0, sys.argv[1])
from pilot.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    code = main(sys.argv[2:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def top_level_imports(path: Path) -> set[str]:
    """The package modules a module imports when it is imported (not those its functions import when called)."""
    found = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and node.level:
            base = (node.module or "").split(".")
            found |= {".".join(filter(None, base + ([a.name] if not node.module else []))) for a in node.names}
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
    the start-up's time is scripts/bench_runner.py's."""

    def assert_lean(self, argv: list[str], code: int, unneeded: tuple) -> set[str]:
        """What the command imported, none of `unneeded` among it but those a study's design module imports itself
        (the registry imports every study's design: a study may choose to, the shared code never does)."""
        got, modules = modules_imported_by(argv, self.make_tmp())
        self.assertEqual(got, code)
        chosen = {f"pilot.{name}" for path in (PACKAGE / "studies").glob("*.py") if "_" not in path.stem
                  for name in top_level_imports(path)}
        self.assertEqual(sorted(modules & (set(unneeded) - chosen)), [])
        self.assertEqual(sorted(m for m in modules if m.startswith("pilot.studies.") and
                                m.rsplit("_", 1)[-1] in ("analysis", "figures", "report")), [])
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
        self.assertNotIn("pilot.gate", modules)

    def test_a_hook_imports_its_module_on_first_call(self):
        """The registry's hooks call the analysis modules' own functions (a patch of one is seen), and a probe kind
        that a study's analysis registers is there when a probe of that kind is first read."""
        from pilot.studies import xr001_analysis
        with mock.patch.object(xr001_analysis, "in_run_order", return_value="ordered") as in_run_order:
            self.assertEqual(records.study_named("xr001").run_order("rows"), "ordered")
        in_run_order.assert_called_once_with("rows")
        script = ("import sys; sys.path.insert(0, sys.argv[1]); import pilot.studies; from pilot import bank; "
                  "before = 'pilot.studies.constraints_analysis' in sys.modules; "
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

    def test_every_module_opens_with_a_docstring(self):
        for path in PACKAGE.rglob("*.py"):
            with self.subTest(path.name):
                self.assertTrue(ast.get_docstring(ast.parse(path.read_text())))


if __name__ == "__main__":
    unittest.main()
